// The native backend's Work objects and the per-group executor that runs them.
//
// Braid's calls on one communicator must come from one thread at a time and be issued in
// the same order on every rank. An Executor keeps that order: every call of a group passes
// through its queue and runs one batch at a time, with Braid's NULL stream (the call has
// completed when it returns). Asynchronous calls run on the executor's C++ worker thread;
// a blocking wait() on a queued call runs the queue's head in the waiting thread when
// nothing else is running, which saves two thread hand-offs per blocking call. Either way
// no Python runs and the GIL is not held: torch's bindings release it around the call and
// around wait(), and completion (the Work, its c10::ivalue::Future) is set from C++.
//
// Point-to-point calls (and, between startCoalescing and endCoalescing, every call) are
// "fusable": held back until someone waits on them, asks whether they are done, takes
// their future, or queues a call that is not fusable behind them; consecutive fusable
// calls then run as one Braid group (braidGroupStart/End), point-to-point ones sorted by
// (direction, peer, tag) so that both sides' orders line up.
//
// Thread-safety: Executor and BraidWork may be used from any thread.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"

#ifdef BRAID_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace braid::torch_ext {

class Executor;

// The sort key of a call within one Braid group (kind: 0 collective, 1 recv, 2 send).
struct OrderKey {
  int kind = 0;
  int peer = 0;
  int tag = 0;
};

class BraidWork : public c10d::Work {
 public:
  // Runs the Braid call(s) on the communicator and stream (NULL: the executor's calls,
  // complete on return); returns the first failed result.
  using Call = std::function<braidResult_t(braidComm_t, braidStream_t)>;
  // Runs after a successful call, in the same thread (copies into list outputs).
  using After = std::function<void()>;

  BraidWork(int rank, c10d::OpType type, std::string what, std::shared_ptr<Executor> executor,
            std::vector<at::Tensor> outputs, Call call, After after = nullptr);
  ~BraidWork() override;

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  const std::string& what() const {
    return what_;
  }

  // Settings made before submission.
  void setFusable(OrderKey order) {
    fusable_ = true;
    order_ = order;
  }
  bool fusable() const {
    return fusable_;
  }
  const OrderKey& order() const {
    return order_;
  }
  // Tensors (and buffers) the call reads or writes that are not outputs.
  void keep(std::vector<at::Tensor> tensors) {
    keep_ = std::move(tensors);
  }
  // A receive from any source: the rank its message came from (-1 until known).
  void setSource(std::shared_ptr<std::atomic<int>> source) {
    source_ = std::move(source);
  }

#ifdef BRAID_TORCH_CUDA
  // The call was enqueued on `stream`: it is done once the stream has run it.
  void setCudaStream(const c10::cuda::CUDAStream& stream);
#endif

  // Executor side: the call, then after(), then completion.
  braidResult_t runCall(braidComm_t comm) {
    return call_(comm, nullptr);
  }
  void runAfter() {
    if (after_) {
      after_();
    }
  }
  bool done() const {
    return done_.load(std::memory_order_acquire);
  }
  void setSubmitted(std::chrono::steady_clock::time_point t, uint64_t number) {
    submitted_ = t;
    number_ = number;
  }
  // Its place in its executor's queue, counted from 1.
  uint64_t number() const {
    return number_;
  }
  std::chrono::steady_clock::time_point submitted() const {
    return submitted_;
  }
  // Marks the work done (error or not) and completes its future; called once.
  void complete(std::exception_ptr error);

 private:
  // Completes a future with the work's outcome (after complete()).
  void settle(c10::ivalue::Future& future);

  std::string what_;
  std::shared_ptr<Executor> executor_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  Call call_;
  After after_;
  bool fusable_ = false;
  OrderKey order_;
  std::atomic<bool> done_{false};
  std::chrono::steady_clock::time_point submitted_;
  uint64_t number_ = 0;
  std::exception_ptr error_;
  std::shared_ptr<std::atomic<int>> source_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // made by getFuture(), under mutex_
#ifdef BRAID_TORCH_CUDA
  std::optional<at::cuda::CUDAEvent> event_;
  c10::DeviceIndex device_ = 0;
#endif
};

using WorkPtr = c10::intrusive_ptr<BraidWork>;

class Executor {
 public:
  Executor(braidComm_t comm, std::string name);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues work; wakes the worker unless it is fusable (held back).
  void submit(const WorkPtr& work);
  // Blocks until work is done; with a timeout (> 0) at most that long, the worker
  // thread running the calls (a call blocked in this thread could not be left).
  void waitFor(BraidWork* work, std::chrono::milliseconds timeout);
  // Lets the worker run held-back work.
  void kick();
  // Waits until every queued call has run (from a thread outside the executor).
  void drain();
  // Refuses new work, runs what is queued, and ends the worker thread.
  void close();
  // After braidCommAbort: queued calls fail with `why`, new ones are refused.
  void abandon(const std::string& why);

  braidComm_t comm() const {
    return comm_;
  }
  const std::string& name() const {
    return name_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  // How long a fresh call is left to its caller's wait() before the worker runs it, how
  // often an idle worker looks at the queue while calls come, and for how long after the
  // last one it keeps looking (then it sleeps until woken).
  static constexpr auto kGrace = std::chrono::microseconds(50);
  static constexpr auto kPoll = std::chrono::microseconds(200);
  static constexpr auto kActiveWindow = std::chrono::milliseconds(2);

  std::vector<WorkPtr> takeLocked();
  void startLocked();
  void finish(std::vector<WorkPtr>& batch);
  void runBatch(std::vector<WorkPtr>& batch);
  void wakeLocked();
  bool runnableLocked();
  void worker();

  braidComm_t comm_;
  const std::string name_;
  std::mutex mu_;
  std::condition_variable doneCv_;   // waiters for calls to finish
  std::condition_variable readyCv_;  // the worker, for calls to run
  std::deque<WorkPtr> queue_;
  bool busy_ = false;
  bool closed_ = false;
  // Works are numbered as queued; those up to the last wake's count (a kick, a bounded
  // wait) were asked to run now: fusable ones may run, and none waits out the grace period.
  // Work queued after a wake waits for one of its own, so that a wake that came while the
  // worker ran the very work it was for does not release the next fusable work alone.
  uint64_t queued_ = 0;
  uint64_t wokenThrough_ = 0;
  bool parked_ = false;  // the worker sleeps until notified
  Clock::time_point lastSubmit_;
  std::string abandoned_;
  std::thread thread_;
};

// An error for a failed Braid call: braidResult_t's class with Braid's text after `what`.
std::exception_ptr callError(braidResult_t result, braidComm_t comm, const std::string& what);

}  // namespace braid::torch_ext
