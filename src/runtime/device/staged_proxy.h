// StagedProxy: the device calls the windows (runtime/device/device_windows.h) do not run, ordered
// on the caller's CUDA stream and returning at once, as NCCL's calls do: calls of ranks on several
// nodes, send/recv on 3+ ranks before the windows exist, host buffers on one rank, and everything
// under BRAID_CUDA_IPC=0.
//
// A call becomes a ticket. On the stream: copies of its device buffers into pinned
// memory (exec/cuda/staging.h), a stream write of the ticket's number to its ready word,
// a stream wait until the done word reaches that number (the wait kernel under
// BRAID_CUDA_WAITS=kernel, as the windows' waits), the copies back, and a write to
// its back word. The proxy thread takes the tickets in the order they were issued, which
// every rank shares: it waits for a ticket's ready word, runs the host collective on the
// pinned copies (runOps), and writes the done word. Pinned memory goes back to the pool
// once the back word shows that the stream has copied the results out. Each call's
// stream work waits for the communicator's device call before it (DeviceOrder, shared with
// the windows), whatever stream that ran on; host collectives issued after staged calls
// wait for them (waitIdle), so every rank runs its host collectives in issue order.
//
// The ticket goes to the proxy as soon as its ready write is enqueued, before the done
// wait: the host collective needs nothing more of the issuing thread, so a peer's call
// never waits for what that thread does next (otherwise a point-to-point call could wait
// for a thread that is not its peer's). Ranks that are threads of one process: the done
// wait is enqueued only once the other threads' ranks have issued their parts
// (runtime/device/thread_peers.h), as their streams may share CUDA's hardware queues.
//
// Never a silent hang: a host collective that fails (a dead peer, the timeout) raises the
// communicator's asynchronous error and still writes the done word, so the stream goes
// on (its results undefined) and braidCommGetAsyncError says why. An abort or a failure
// lets every waiting ticket go the same way. A call enqueued only in part fails the
// communicator at once and waits for no stream: its ticket runs nothing, its pinned copies
// are kept.
//
// The words live in one pinned page that the GPU reaches: 256 (ready, back) pairs, a
// ticket using pair (number % 256), and a 257th issue waits until the oldest has come back.
// Thread-safe: issue() from any thread (one at a time per communicator, as every call);
// the proxy thread is the class's own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/call.h"
#include "exec/cuda/device_call.h"
#include "exec/cuda/staging.h"
#include "runtime/communicator.h"
#include "runtime/device/device_order.h"

namespace braid {

class StagedProxy {
 public:
  // `order`: the communicator's (runtime/device_calls.h), shared with the device windows.
  static Expected<std::unique_ptr<StagedProxy>> create(braidComm* comm,
                                                       std::shared_ptr<DeviceOrder> order);
  // Stops the thread once every issued ticket has run (braidCommDestroy and abort drain
  // comm->inflight first), then waits for the streams' copies back (bounded by the
  // communicator's timeout, not at all after an abort or a failure; what has not come
  // back is kept until exit, never freed under a stream that may still write it).
  ~StagedProxy();
  StagedProxy(const StagedProxy&) = delete;
  StagedProxy& operator=(const StagedProxy&) = delete;

  // Enqueues `ops` (device buffers staged, host buffers as they are) on `stream` (a CUDA
  // stream, or nullptr: the legacy default stream) and returns; counts the ticket in
  // comm->inflight until the proxy has run it.
  Status issue(std::vector<Call> ops, void* stream);
  // Blocks until every ticket issued so far has run its host collective.
  void waitIdle();

 private:
  static constexpr uint64_t kSlots = 256;
  struct Words {  // the pinned page
    uint64_t ready[kSlots];
    uint64_t back[kSlots];
    uint64_t done;
  };
  struct Ticket {
    uint64_t number = 0;
    std::vector<Call> ops;             // on the staged addresses; empty: nothing to run
    std::shared_ptr<StagedBuffers> staged;  // also the issuing thread's, until it returns
  };

  explicit StagedProxy(braidComm* comm) : comm_(comm) {}
  void loop();
  // Waits until the stream has marked ticket `number` ready, or the communicator aborted
  // or failed (false).
  bool waitReady(uint64_t number);
  // Drops the tickets whose copies back the streams have finished. Holds mu_.
  void reclaimLocked();

  braidComm* comm_;
  Words* words_ = nullptr;  // pinned: the GPU reaches it at the same address
  std::shared_ptr<DeviceOrder> order_;
  bool kernelWaits_ = false;  // BRAID_CUDA_WAITS=kernel: the done wait is cuda::launchWait
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Ticket> queue_;      // issued, not yet run
  std::deque<Ticket> returning_;  // run, copies back not yet seen done
  uint64_t issued_ = 0;           // tickets numbered 1, 2, ...
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace braid
