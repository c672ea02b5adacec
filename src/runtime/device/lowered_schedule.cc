// The CUDA executor: a collective's Schedule (the same algorithms the host executor runs)
// lowered to device work (exec/cuda/device_program.h) and enqueued on the caller's stream over
// the device FIFOs, the send slots every window holds per peer. It runs what the windows'
// own collectives do not: all-to-all-v, every collective whose algorithm BRAID_ALGO
// names, the ring, tree or halving-doubling the cost model picks (select/device_choice.h),
// and loaded algorithms (schedule files, runtime/user_algorithms.h) forced or picked alike.
#include <algorithm>
#include <chrono>
#include <thread>

#include "algorithms/registry.h"
#include "core/futex.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/cuda/device_call.h"
#include "exec/cuda/device_program.h"
#include "exec/reduce.h"
#include "runtime/device/device_order.h"
#include "runtime/device/device_windows.h"
#include "runtime/premul.h"
#include "runtime/schedule_cache.h"

namespace braid {

Status enqueueData(const DeviceOp& d, void* dst, const void* const* srcs, const Call& op,
                   int nranks, void* stream) {
  if (d.kind == DeviceOp::Kind::kCopy) {
    return dst == srcs[0] ? Status::ok() : cuda::copyAsync(dst, srcs[0], d.bytes, stream);
  }
  // avg reduces as sum until the final value, which divides by nranks.
  const braidRedOp_t partial = op.op == braidAvg ? braidSum : op.op;
  return cuda::launchReduce(dst, srcs, d.nsrcs, d.bytes / datatypeSize(op.datatype), op.datatype,
                            d.final ? op.op : partial, nranks, stream);
}

// The old buffer is retired, not freed: queued work may still use it, and cudaFree would
// wait for the whole device, a stream the caller holds too. Growth at least doubles, so
// the retired buffers add up to less than the live one.
Status DeviceWindows::growDevice(void** p, size_t* have, size_t bytes) {
  if (*have >= bytes) return Status::ok();
  const size_t size = std::max(bytes, 2 * *have);
  BRAID_ASSIGN_OR_RETURN(void* grown, cuda::deviceAlloc(size));
  if (*p != nullptr) retired_.push_back(*p);
  *p = grown;
  *have = size;
  return Status::ok();
}

Status DeviceWindows::growScratch(size_t bytes) {
  return growDevice(&scratch_, &scratchBytes_, bytes);
}

Status DeviceWindows::waitFor(void* stream, char* word, uint64_t value) {
  return kernelWaits_ ? cuda::launchWait(word, value, stream)
                      : cuda::streamWaitValue64(stream, word, value);
}

void DeviceWindows::enqueued(int index, uint64_t value) {
  if (enqueued_ == nullptr) return;
  enqueued_[index].store(value);
  enqueuedChanged_->notify();
}

Status DeviceWindows::awaitEnqueued(int index, uint64_t value, int writer) {
  if (enqueued_ == nullptr || writer == rank_) return Status::ok();
  std::atomic<uint64_t>& word = enqueued_[index];
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(comm_->config().timeoutMs);
  return awaitChange(
      *enqueuedChanged_, [&] { return static_cast<int64_t>(word.load() - value) >= 0; },
      [&]() -> Status {
        if (released() || comm_->aborted() || comm_->failed()) {
          Status err = comm_->asyncError();
          return err.isOk() ? Status(braidRemoteError, "device windows: barriers were released")
                            : err;
        }
        if (std::chrono::steady_clock::now() <= until) return Status::ok();
        return Status(braidTimeout,
                      "device windows: rank " + std::to_string(writer) +
                          " (a thread of this process) did not enqueue its part of the call "
                          "within " +
                          std::to_string(comm_->config().timeoutMs) +
                          " ms; threads that drive several ranks must group their calls");
      });
}

// Each operation on `stream`: counters through the shared page, copies and reductions
// (enqueueData); with ranks on one GPU as threads, a wait only after its write (above).
Status DeviceWindows::enqueue(const std::vector<DeviceOp>& program, const Call& op,
                              const void* in, void* out, void* scratch, void* stream) {
  auto addr = [&](const DeviceAddr& a) -> char* {
    switch (a.space) {
      // Integer arithmetic: send/receive steps address memory absolutely from a null base.
      case DeviceAddr::Space::kInput:
        return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(in) + a.offset);
      case DeviceAddr::Space::kOutput:
        return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(out) + a.offset);
      case DeviceAddr::Space::kScratch:
        return static_cast<char*>(scratch) + a.offset;
      case DeviceAddr::Space::kSlot:
        return slot(a.from, a.to, a.slot) + a.offset;
      case DeviceAddr::Space::kHalf:
        return windows_[static_cast<size_t>(a.from)] + a.slot * halfBytes_ + a.offset;
      case DeviceAddr::Space::kGraphSlot:
        return graphSlot(a.from, a.to, a.slot) + a.offset;
      case DeviceAddr::Space::kGraphRegion:
        return graphRegion(a.from) + a.offset;
    }
    return nullptr;
  };
  // A flag's wait until it is set, then its clearing: a captured program's take of a
  // signal or a graph slot's full or freed flag.
  auto take = [this, stream](char* flag) {
    BRAID_TRY(waitFor(stream, flag, 1));
    return cuda::streamWriteValue64(stream, flag, 0);
  };
  for (const DeviceOp& d : program) {
    switch (d.kind) {
      case DeviceOp::Kind::kWaitPosted:
        BRAID_TRY(awaitEnqueued(enqueuedIndex(true, d.from, d.to), d.value, d.from));
        BRAID_TRY(waitFor(stream, device(posted(d.from, d.to)), d.value));
        break;
      case DeviceOp::Kind::kWaitConsumed:
        BRAID_TRY(awaitEnqueued(enqueuedIndex(false, d.from, d.to), d.value, d.to));
        BRAID_TRY(waitFor(stream, device(consumed(d.from, d.to)), d.value));
        break;
      case DeviceOp::Kind::kPost:
        BRAID_TRY(cuda::streamWriteValue64(stream, device(posted(d.from, d.to)), d.value));
        enqueued(enqueuedIndex(true, d.from, d.to), d.value);
        break;
      case DeviceOp::Kind::kConsume:
        BRAID_TRY(cuda::streamWriteValue64(stream, device(consumed(d.from, d.to)), d.value));
        enqueued(enqueuedIndex(false, d.from, d.to), d.value);
        break;
      case DeviceOp::Kind::kArrive:
        BRAID_TRY(cuda::streamWriteValue64(stream, device(counters_[d.from].value), d.value));
        enqueued(enqueuedIndex(d.from), d.value);
        break;
      case DeviceOp::Kind::kWaitRank:
        BRAID_TRY(awaitEnqueued(enqueuedIndex(d.from), d.value, d.from));
        BRAID_TRY(waitFor(stream, device(counters_[d.from].value), d.value));
        break;
      case DeviceOp::Kind::kSignal:
        BRAID_TRY(cuda::streamWriteValue64(
            stream, device(graphFlag(static_cast<int>(d.value), d.from, d.to)), 1));
        break;
      case DeviceOp::Kind::kWaitSignal:  // cleared for the set's next barrier
        BRAID_TRY(take(device(graphFlag(static_cast<int>(d.value), d.from, d.to))));
        break;
      case DeviceOp::Kind::kWaitFreed:
        BRAID_TRY(take(device(freed(d.from, d.to, static_cast<int>(d.value)))));
        break;
      case DeviceOp::Kind::kFill:
        BRAID_TRY(cuda::streamWriteValue64(
            stream, device(full(d.from, d.to, static_cast<int>(d.value))), 1));
        break;
      case DeviceOp::Kind::kWaitFull: {  // marked waiting meanwhile, for the watch
        char* mark = device(waiting(d.from, d.to));
        BRAID_TRY(cuda::streamWriteValue64(stream, mark, 1));
        BRAID_TRY(take(device(full(d.from, d.to, static_cast<int>(d.value)))));
        BRAID_TRY(cuda::streamWriteValue64(stream, mark, 0));
        break;
      }
      case DeviceOp::Kind::kFree:
        BRAID_TRY(cuda::streamWriteValue64(
            stream, device(freed(d.from, d.to, static_cast<int>(d.value))), 1));
        break;
      case DeviceOp::Kind::kScale:  // a premul-sum's input on its way into the window
        BRAID_TRY(scaleInto(op, addr(d.dst), addr(d.src[0]), d.bytes, stream));
        break;
      case DeviceOp::Kind::kCopy:
      case DeviceOp::Kind::kReduce: {
        const void* srcs[kMaxDeviceSources];
        for (int i = 0; i < (d.kind == DeviceOp::Kind::kCopy ? 1 : d.nsrcs); ++i) {
          srcs[i] = addr(d.src[i]);
        }
        BRAID_TRY(enqueueData(d, addr(d.dst), srcs, op, nranks_, stream));
        break;
      }
    }
  }
  return Status::ok();
}

// Where device work reaches op's buffers: the buffers themselves when they are device
// memory, else device copies of them (spans of overlapping regions staged together).
Expected<size_t> DeviceWindows::placeBuffers(const Call& op, char** in, char** out,
                                             void* stream) {
  std::vector<StagedRegion> regions = regionsOf(op, rank_, nranks_);
  *in = const_cast<char*>(static_cast<const char*>(op.send));
  *out = static_cast<char*>(op.recv);
  bool reach = true;
  for (const StagedRegion& r : regions)
    reach = reach && (r.bytes == 0 || cuda::isDeviceMemory(r.ptr));
  if (reach) return size_t{0};
  const std::vector<StagedSpan> spans = mergeOverlapping(regions);
  size_t total = 0;
  for (const StagedSpan& s : spans) total += (s.bytes + 255) / 256 * 256;
  BRAID_TRY(growDevice(&stage_, &stageBytes_, total));
  size_t at = 0;
  for (const StagedSpan& s : spans) {
    char* dev = static_cast<char*>(stage_) + at;
    BRAID_TRY(cuda::copyAsync(dev, reinterpret_cast<const void*>(s.start), s.bytes, stream));
    auto move = [&](char** p) {
      const auto a = reinterpret_cast<uintptr_t>(*p);
      if (a >= s.start && a < s.start + s.bytes) *p = dev + (a - s.start);
    };
    move(in);
    move(out);
    at += (s.bytes + 255) / 256 * 256;
  }
  return regions[1].bytes;  // the receive region, written
}

// A premul-sum's schedule runs as a sum over its input scaled into scaled_ (the
// communicator's device calls run in order, as scratch_ and stage_ are shared too).
Status DeviceWindows::runSchedule(const Call& request, algo::Algorithm alg, void* stream,
                                  const algo::AlgoFile* user) {
  if (request.preMul.on) {
    const size_t bytes = inputBytes(request, rank_, nranks_);
    Call scaled = request;
    scaled.preMul.on = false;
    if (bytes != 0) {
      BRAID_TRY(growDevice(&scaled_, &scaledBytes_, bytes));
      BRAID_TRY(scaleInto(request, scaled_, request.send, bytes, stream));
      scaled.send = scaled_;
    }
    return runSchedule(scaled, alg, stream, user);
  }
  const Call& op = request;
  const size_t es = datatypeSize(op.datatype);
  algo::CollArgs args = collArgsOf(op, rank_, nranks_);
  args.maxStepElems = slotBytes_ / es;  // one slot per step: half the FIFO, as the host's
  // A loaded algorithm's schedule is instantiated from its file as the host's is, in passes
  // of at most a slot per step (algorithms/file/schedule_file.h).
  const algo::Schedule* loaded = nullptr;
  if (user != nullptr) {
    BRAID_ASSIGN_OR_RETURN(loaded, userScheduleFor(owner_, args, *user));
  }
  const algo::Schedule& s = loaded != nullptr ? *loaded : scheduleFor(owner_, args, alg, "cuda");
  if (user != nullptr) {
    ranLoaded_++;
  } else {
    ran_[static_cast<int>(DeviceExecutor::kLowered)][static_cast<int>(alg)]++;
  }
  char *in = nullptr, *out = nullptr;
  BRAID_ASSIGN_OR_RETURN(size_t back, placeBuffers(op, &in, &out, stream));
  if (s.scratchElems != 0) BRAID_TRY(growScratch(s.scratchElems * es));
  BRAID_TRY(runLowered(s, op, in, out, stream));
  return back == 0 ? Status::ok() : cuda::copyAsync(op.recv, out, back, stream);
}

Status DeviceWindows::runLowered(const algo::Schedule& s, const Call& op, const void* in,
                                 void* out, void* stream) {
  if (captured_) {  // through the graph slots, counted from zero (exec/cuda/device_program.h)
    PairCounts zero(nranks_);
    BRAID_ASSIGN_OR_RETURN(
        std::vector<DeviceOp> program,
        lowerSchedule(s, datatypeSize(op.datatype), kGraphSlotBytes, &zero, true));
    return enqueue(program, op, in, out, scratch_, stream);
  }
  PairCounts counts(nranks_);
  for (int q = 0; q < nranks_; ++q) {
    counts.sent[static_cast<size_t>(q)] = sent_[q].load(std::memory_order_relaxed);
    counts.received[static_cast<size_t>(q)] = received_[q].load(std::memory_order_relaxed);
  }
  BRAID_ASSIGN_OR_RETURN(std::vector<DeviceOp> program,
                         lowerSchedule(s, datatypeSize(op.datatype), slotBytes_, &counts));
  BRAID_TRY(enqueue(program, op, in, out, scratch_, stream));
  bool wake = false;  // the watch looks sooner when a count passes a multiple of 64
  for (int q = 0; q < nranks_; ++q) {
    const size_t i = static_cast<size_t>(q);
    for (auto [was, now] :
         {std::pair{&sent_[q], counts.sent[i]}, std::pair{&received_[q], counts.received[i]}}) {
      const uint64_t before = was->exchange(now, std::memory_order_relaxed);
      wake = wake || (now != before && (before == 0 || before / 64 != now / 64));
    }
  }
  if (wake) watchCv_.notify_one();
  return Status::ok();
}

}  // namespace braid
