#include "runtime/call_executor.h"

#include "runtime/communicator.h"
#include "runtime/device_calls.h"
#include "runtime/schedule_cache.h"

namespace braid {
namespace {

// The FIFO schedules (exec/host/fifo_executor.h): the collective's schedule from the
// communicator's cache, or the one a group's sends and receives were built into.
class HostFifo final : public CallExecutor {
 public:
  Executor kind() const override { return Executor::kHostFifo; }
  Status run(const Call*, size_t, const CallContext& ctx) override {
    const algo::Schedule& s =
        ctx.schedule != nullptr ? *ctx.schedule : scheduleFor(ctx.comm, *ctx.args, ctx.algorithm);
    return ctx.comm->exec->run(s, ctx.buffers, *ctx.desc);
  }
};

// The shared windows (exec/host/shared_windows.h), which run the collective's window
// schedule (or its FIFO schedule where they fall back), both from the communicator's cache.
class HostWindows final : public CallExecutor {
 public:
  Executor kind() const override { return Executor::kHostWindows; }
  Status run(const Call*, size_t, const CallContext& ctx) override {
    return ctx.comm->windows->run(
        *ctx.args, ctx.algorithm, ctx.buffers, *ctx.desc,
        [&](const algo::CollArgs& args, algo::Algorithm alg) -> const algo::Schedule& {
          return scheduleFor(ctx.comm, args, alg, args.windowElems != 0 ? "host windows" : "host");
        });
  }
};

}  // namespace

CallExecutors makeExecutors() {
  CallExecutors table;
  table[static_cast<size_t>(Executor::kHostFifo)] = std::make_unique<HostFifo>();
  table[static_cast<size_t>(Executor::kHostWindows)] = std::make_unique<HostWindows>();
  addDeviceExecutors(&table);
  return table;
}

}  // namespace braid
