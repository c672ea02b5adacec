#include "work.h"

#include <algorithm>

#include "braid_api.h"
#include "tensor_args.h"

#ifdef BRAID_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace braid::torch_ext {
namespace {

// The type of every Work's future value (a list of tensors), made once.
const c10::TypePtr& tensorListType() {
  static const c10::TypePtr type = c10::ListType::create(c10::TensorType::get());
  return type;
}

}  // namespace

std::exception_ptr callError(braidResult_t result, braidComm_t comm, const std::string& what) {
  std::string text = lastError(comm, result);
  if (result == braidTimeout) {
    // torch callers (and gloo's tests) match "Timed out".
    return std::make_exception_ptr(
        Error(result, "braid: " + what + ": Timed out (" + text + ")"));
  }
  return std::make_exception_ptr(Error(result, what + ": " + text));
}

// ---- BraidWork ------------------------------------------------------------------------------

BraidWork::BraidWork(int rank, c10d::OpType type, std::string what,
                     std::shared_ptr<Executor> executor, std::vector<at::Tensor> outputs,
                     Call call, After after)
    : c10d::Work(rank, type),
      what_(std::move(what)),
      executor_(std::move(executor)),
      outputs_(std::move(outputs)),
      call_(std::move(call)),
      after_(std::move(after)) {}

BraidWork::~BraidWork() = default;

void BraidWork::complete(std::exception_ptr error) {
  error_ = error;
  call_ = nullptr;  // the closures hold tensors and buffers: let them go now
  after_ = nullptr;
  keep_.clear();
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = true;
    exception_ = error;
    future = future_;
  }
  done_.store(true, std::memory_order_release);
  cv_.notify_all();
  if (future) {
    settle(*future);
  }
}

void BraidWork::settle(c10::ivalue::Future& future) {
  if (error_) {
    future.setError(error_);
  } else {
    future.markCompleted(c10::IValue(outputs_));
  }
}

bool BraidWork::isCompleted() {
#ifdef BRAID_TORCH_CUDA
  if (event_) {
    return event_->query();
  }
#endif
  if (!done()) {
    executor_->kick();
  }
  return done();
}

bool BraidWork::isSuccess() const {
  return done() && !error_;
}

std::exception_ptr BraidWork::exception() const {
  return done() ? error_ : nullptr;
}

int BraidWork::sourceRank() const {
  if (!source_) {
    throw Error(braidInvalidUsage, "braid: source_rank() is for receives from any source");
  }
  const_cast<BraidWork*>(this)->wait(kNoTimeout);
  return source_->load();
}

std::vector<at::Tensor> BraidWork::result() {
  wait(kNoTimeout);
  return outputs_;
}

void BraidWork::synchronize() {
  wait(kNoTimeout);
}

bool BraidWork::wait(std::chrono::milliseconds timeout) {
#ifdef BRAID_TORCH_CUDA
  if (event_) {  // the caller's stream goes on after the call's
    event_->block(at::cuda::getCurrentCUDAStream(device_));
    return true;
  }
#endif
  if (!done()) {
    executor_->waitFor(this, timeout);
  }
  if (!done()) {  // torch code ignores the result: a timeout must raise, as in gloo
    throw Error(braidTimeout, "braid: " + what_ + ": Timed out waiting " +
                                  std::to_string(timeout.count()) +
                                  " ms for it (Work.wait timeout); the operation goes on");
  }
  if (error_) {
    std::rethrow_exception(error_);
  }
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> BraidWork::getFuture() {
  // Made on first request: most calls are waited on, and a future costs allocations.
  c10::intrusive_ptr<c10::ivalue::Future> future;
  bool settled = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!future_) {
      future_ = c10::make_intrusive<c10::ivalue::Future>(tensorListType());
      settled = completed_;
    }
    future = future_;
  }
  if (settled) {
    settle(*future);
  } else if (!done()) {
    executor_->kick();  // held-back calls run: nobody may wait() on this one
  }
  return future;
}

#ifdef BRAID_TORCH_CUDA
void BraidWork::setCudaStream(const c10::cuda::CUDAStream& stream) {
  device_ = stream.device_index();
  event_.emplace();
  event_->record(stream);
  // A future on the device, done now: its value is ready for a stream once that stream
  // waits for the events the future records on the current stream (the call's).
  auto future = c10::make_intrusive<c10::ivalue::Future>(
      tensorListType(), std::vector<c10::Device>{c10::Device(c10::kCUDA, device_)});
  future->markCompleted(c10::IValue(outputs_));
  std::lock_guard<std::mutex> lock(mutex_);
  future_ = future;
}
#endif

// ---- Executor -------------------------------------------------------------------------------

Executor::Executor(braidComm_t comm, std::string name) : comm_(comm), name_(std::move(name)) {}

Executor::~Executor() {
  close();
}

void Executor::submit(const WorkPtr& work) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) {
    throw Error(braidInvalidUsage, "braid: " + work->what() + ": process group " + name_ +
                                       (abandoned_.empty() ? " is shut down" : " " + abandoned_));
  }
  lastSubmit_ = Clock::now();
  work->setSubmitted(lastSubmit_, ++queued_);
  queue_.push_back(work);
  if (work->fusable()) {
    return;
  }
  // A worker that is polling (or waiting out a grace period) sees the call by itself: no
  // system call on the caller's path, which is most often about to wait() inline.
  if (!thread_.joinable()) {
    startLocked();
  } else if (parked_) {
    readyCv_.notify_one();
  }
}

void Executor::kick() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty()) {
    wakeLocked();
  }
}

void Executor::startLocked() {
  if (!thread_.joinable() && !closed_) {
    thread_ = std::thread([this] { worker(); });
  }
}

void Executor::wakeLocked() {
  startLocked();
  wokenThrough_ = queued_;
  readyCv_.notify_one();
}

void Executor::waitFor(BraidWork* work, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const bool bounded = timeout.count() > 0;
  const auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  if (bounded && !work->done()) {
    wakeLocked();
  }
  while (!work->done()) {
    if (!bounded && !busy_ && !queue_.empty()) {
      std::vector<WorkPtr> head = takeLocked();
      lock.unlock();
      finish(head);
      lock.lock();
      continue;
    }
    if (!bounded) {
      doneCv_.wait(lock);
    } else if (doneCv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return;
    }
  }
}

void Executor::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!queue_.empty() || busy_) {
    if (!busy_) {
      std::vector<WorkPtr> head = takeLocked();
      lock.unlock();
      finish(head);
      lock.lock();
      continue;
    }
    doneCv_.wait(lock);
  }
}

void Executor::close() {
  drain();
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    readyCv_.notify_all();
    thread = std::move(thread_);
  }
  if (thread.joinable()) {
    thread.join();
  }
}

void Executor::abandon(const std::string& why) {
  std::deque<WorkPtr> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    abandoned_ = why;
    comm_ = nullptr;
    left.swap(queue_);
    readyCv_.notify_all();
  }
  for (WorkPtr& w : left) {
    w->complete(std::make_exception_ptr(
        Error(braidInvalidUsage, "braid: " + w->what() + ": process group " + name_ + " " + why)));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    doneCv_.notify_all();
  }
}

std::vector<WorkPtr> Executor::takeLocked() {
  busy_ = true;
  std::vector<WorkPtr> batch{queue_.front()};
  queue_.pop_front();
  while (batch.front()->fusable() && !queue_.empty() && queue_.front()->fusable()) {
    batch.push_back(queue_.front());
    queue_.pop_front();
  }
  return batch;
}

void Executor::runBatch(std::vector<WorkPtr>& batch) {
  braidComm_t comm = comm_;
  const Api& c = api();
  if (batch.size() == 1) {
    braidResult_t r = batch[0]->runCall(comm);
    if (r != braidSuccess) {
      std::rethrow_exception(callError(r, comm, batch[0]->what()));
    }
    return;
  }
  std::stable_sort(batch.begin(), batch.end(), [](const WorkPtr& a, const WorkPtr& b) {
    const OrderKey &x = a->order(), &y = b->order();
    return std::tie(x.kind, x.peer, x.tag) < std::tie(y.kind, y.peer, y.tag);
  });
  braidResult_t r = c.braidGroupStart();
  if (r != braidSuccess) {
    std::rethrow_exception(callError(r, nullptr, "braidGroupStart"));
  }
  braidResult_t first = braidSuccess;
  std::string firstWhat;
  for (WorkPtr& w : batch) {
    braidResult_t one = w->runCall(comm);
    if (one != braidSuccess && first == braidSuccess) {
      first = one;
      firstWhat = w->what();
    }
  }
  r = c.braidGroupEnd();
  if (first != braidSuccess) {
    std::rethrow_exception(callError(first, comm, firstWhat));
  }
  if (r != braidSuccess) {
    std::rethrow_exception(callError(r, comm, "group of " + std::to_string(batch.size()) +
                                                  " calls (" + batch[0]->what() + ", ...)"));
  }
}

void Executor::finish(std::vector<WorkPtr>& batch) {
  std::exception_ptr error;
  try {
    runBatch(batch);
    for (WorkPtr& w : batch) {
      w->runAfter();
    }
  } catch (...) {  // handed to the waiters, never lost in a thread
    error = std::current_exception();
  }
  for (WorkPtr& w : batch) {
    w->complete(error);
  }
  std::lock_guard<std::mutex> lock(mu_);
  busy_ = false;
  doneCv_.notify_all();
  if (!queue_.empty()) {  // the worker may have waited for this batch to end
    readyCv_.notify_one();
  }
}

bool Executor::runnableLocked() {
  // Fusable work alone in the queue waits for a wait(), an isCompleted() or a call
  // behind it that is not fusable.
  return queue_.front()->number() <= wokenThrough_ ||
         std::any_of(queue_.begin(), queue_.end(), [](const WorkPtr& w) { return !w->fusable(); });
}

void Executor::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (busy_ || queue_.empty() || !runnableLocked()) {
      if (closed_ && queue_.empty()) {
        return;
      }
      if (Clock::now() - lastSubmit_ < kActiveWindow) {
        readyCv_.wait_for(lock, kPoll);  // calls come often: look again soon, unasked
      } else {
        parked_ = true;  // quiet: the next call wakes this thread
        readyCv_.wait(lock);
        parked_ = false;
      }
      continue;
    }
    // Unless asked (a kick, a bounded wait), a fresh call is left to its caller for a
    // moment: a blocking call's wait() runs it inline, without two thread switches.
    auto due = queue_.front()->submitted() + kGrace;
    if (queue_.front()->number() > wokenThrough_ && Clock::now() < due) {
      readyCv_.wait_until(lock, due);
      continue;
    }
    std::vector<WorkPtr> batch = takeLocked();
    lock.unlock();
    finish(batch);
    batch.clear();  // its tensors go now
    lock.lock();
  }
}

}  // namespace braid::torch_ext
