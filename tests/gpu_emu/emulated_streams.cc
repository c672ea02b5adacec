// The emulated GPU's work: streams as worker threads (or shared hardware queues), events,
// copies, graphs and the driver's stream memory operations (the kernels:
// emulated_kernels.cc).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/futex.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/reduce.h"
#include "tests/gpu_emu/emulated_gpu.h"
#include "tests/gpu_emu/emulated_internal.h"

namespace braid::cuda {
namespace emu {
namespace {

// BRAID_EMU_JITTER_US=N: each stream operation starts after a random 0..N us, so that
// stream work lands late against the host code that enqueued it (a GPU's timing is not
// modelled otherwise): races between the two show up in repeated runs.
void jitter() {
  static const int maxUs = [] {
    const char* v = getenv("BRAID_EMU_JITTER_US");
    return v != nullptr ? std::max(0, atoi(v)) : 0;
  }();
  if (maxUs == 0) return;
  thread_local std::minstd_rand rng(static_cast<unsigned>(
      std::hash<std::thread::id>()(std::this_thread::get_id()) ^ static_cast<unsigned>(getpid())));
  std::this_thread::sleep_for(
      std::chrono::microseconds(rng() % (static_cast<unsigned>(maxUs) + 1)));
}

class Stream;

// BRAID_EMU_CONNECTIONS=N: the process's streams on each device share N hardware queues,
// as a CUDA context's streams share CUDA_DEVICE_MAX_CONNECTIONS (8 by default): stream k
// of a device (in the order they were made on it, the default stream among device 0's)
// goes to that device's queue k % N. A queue runs
// its operations one at a time in the order they were queued, whatever their stream, so
// a wait holds back every operation queued behind it, another stream's too. Unset or 0:
// each stream runs on its own.
class Queue {
 public:
  Queue() : worker_([this] { run(); }) { worker_.detach(); }
  void push(Stream* s, std::function<void()> op) {
    std::lock_guard<std::mutex> lock(mu_);
    ops_.emplace_back(s, std::move(op));
    cv_.notify_all();
  }
  // Device `device`'s queue k % N, or nullptr when streams run on their own (N = 0).
  static Queue* forStream(int device, uint64_t k) {
    std::lock_guard<std::mutex> lock(sharedMu());
    const int n = shared();
    if (n == 0) return nullptr;
    std::vector<Queue*>& queues = pool()[device];  // made as needed, never destroyed
    while (queues.size() < static_cast<size_t>(n)) queues.push_back(new Queue);
    return queues[k % static_cast<uint64_t>(n)];
  }
  // N: BRAID_EMU_CONNECTIONS until shareQueues sets it.
  static int& shared() {
    static int n = [] {
      const char* v = getenv("BRAID_EMU_CONNECTIONS");
      return v != nullptr ? std::max(0, atoi(v)) : 0;
    }();
    return n;
  }
  static std::mutex& sharedMu() {
    static auto* mu = new std::mutex;
    return *mu;
  }

 private:
  void run();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Stream*, std::function<void()>>> ops_;
  std::thread worker_;
  static std::vector<Queue*>* pool() {  // by device
    static auto* queues = new std::vector<Queue*>[kMaxDevices];
    return queues;
  }
};

// One stream: a worker thread running its operations in order (or its hardware queue's,
// above). Never destroyed (a destroyed stream's worker finishes its queue and ends), so
// an event or a late operation never meets freed memory.
class Stream {
 public:
  explicit Stream(Queue* queue) : hw_(queue) {
    if (hw_ == nullptr) std::thread([this] { run(); }).detach();
  }
  void push(std::function<void()> op) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capturing_) {  // recorded into the graph: it runs at each launch (graphLaunch)
      graph_.push_back(std::move(op));
      return;
    }
    ++queued_;
    if (hw_ != nullptr) {
      hw_->push(this, std::move(op));
      return;
    }
    queue_.push_back(std::move(op));
    cv_.notify_all();
  }
  // One operation of this stream's has run (on its hardware queue).
  void ran() {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    cv_.notify_all();
  }
  uint64_t queued() {
    std::lock_guard<std::mutex> lock(mu_);
    return queued_;
  }
  void waitFor(uint64_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_ >= n; });
  }
  bool finished(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    return done_ >= n;
  }
  void retire() {
    std::lock_guard<std::mutex> lock(mu_);
    retired_ = true;
    cv_.notify_all();
  }
  bool beginCapture() {
    std::lock_guard<std::mutex> lock(mu_);
    if (capturing_) return false;
    capturing_ = true;
    invalidated_ = false;
    graph_.clear();
    return true;
  }
  // false: it was not capturing; *invalidated: the capture was broken meanwhile; *ops:
  // what it recorded.
  bool endCapture(bool* invalidated, std::vector<std::function<void()>>* ops) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!capturing_) return false;
    capturing_ = false;
    *invalidated = invalidated_;
    ops->swap(graph_);
    graph_.clear();
    return true;
  }
  bool capturing() {
    std::lock_guard<std::mutex> lock(mu_);
    return capturing_;
  }
  // A synchronise or query while capturing: invalidates the capture, as CUDA's do, and
  // says so (true) for the caller to refuse.
  bool breakCapture() {
    std::lock_guard<std::mutex> lock(mu_);
    invalidated_ = invalidated_ || capturing_;
    return capturing_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty() || retired_; });
      if (queue_.empty()) return;
      std::function<void()> op = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      jitter();
      op();
      lock.lock();
      ++done_;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t queued_ = 0, done_ = 0;
  bool retired_ = false;
  bool capturing_ = false, invalidated_ = false;
  std::vector<std::function<void()>> graph_;  // what a capture recorded so far
  Queue* const hw_;                           // its hardware queue, or none
};

void Queue::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !ops_.empty(); });
    std::pair<Stream*, std::function<void()>> op = std::move(ops_.front());
    ops_.pop_front();
    lock.unlock();
    jitter();
    op.second();
    op.first->ran();
    lock.lock();
  }
}

class Streams {
 public:
  static Streams& get() {
    static Streams* all = new Streams;
    return *all;
  }
  Stream* add() {
    std::lock_guard<std::mutex> lock(mu_);
    const int device = currentDeviceOfThread();
    auto* s = new Stream(Queue::forStream(device, made_[device]++));
    live_.insert(s);
    return s;
  }
  // The live stream `handle` names (nullptr: the default stream), or nullptr.
  Stream* find(void* handle) {
    std::lock_guard<std::mutex> lock(mu_);
    if (handle == nullptr) {
      if (default_ == nullptr) default_ = new Stream(Queue::forStream(0, made_[0]++));
      return default_;
    }
    auto* s = static_cast<Stream*>(handle);
    return live_.count(s) != 0 ? s : nullptr;
  }
  bool remove(void* handle) {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_.erase(static_cast<Stream*>(handle)) == 0) return false;
    retired_.push_back(static_cast<Stream*>(handle));
    return true;
  }
  // Every stream, live or retired, the default one too.
  std::vector<Stream*> all() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Stream*> out(live_.begin(), live_.end());
    out.insert(out.end(), retired_.begin(), retired_.end());
    if (default_ != nullptr) out.push_back(default_);
    return out;
  }

 private:
  std::mutex mu_;
  std::set<Stream*> live_;
  std::vector<Stream*> retired_;  // kept (and reachable, for LeakSanitizer): see Stream
  Stream* default_ = nullptr;
  uint64_t made_[kMaxDevices] = {};  // streams made so far on each device, the default one too
};

// An event: the point `stream` had reached when it was recorded.
struct Event {
  std::mutex mu;
  Stream* stream = nullptr;
  uint64_t at = 0;
};

std::mutex eventsMu;
std::set<Event*>* events = new std::set<Event*>;
std::vector<Event*>* destroyedEvents = new std::vector<Event*>;  // a stream may still wait

Event* findEvent(void* handle) {
  std::lock_guard<std::mutex> lock(eventsMu);
  auto* e = static_cast<Event*>(handle);
  return events->count(e) != 0 ? e : nullptr;
}

Status badStream(void* handle) {
  char text[64];
  snprintf(text, sizeof(text), "stream %p is not a live stream", handle);
  return emulated(text);
}

}  // namespace

void waitAtLeast(void* addr, uint64_t value) {
  auto* word = static_cast<std::atomic<uint64_t>*>(addr);
  for (int spin = 0;; ++spin) {
    const uint64_t v = word->load(std::memory_order_acquire);
    if (static_cast<int64_t>(v - value) >= 0) return;
    if (spin < 64) {
      std::this_thread::yield();
      continue;
    }
    futexWait(static_cast<std::atomic<uint32_t>*>(addr), static_cast<uint32_t>(v), 1000);
  }
}

std::string unreachable(const char* what, const void* p, size_t bytes) {
  bool overrun = false;
  if (bytes == 0 || regionOf(p, bytes, &overrun) != Region::kPageable) return "";
  char text[160];
  snprintf(text, sizeof(text), "%s %p (%zu bytes) %s", what, p, bytes,
           overrun ? "runs past the end of its allocation" : "is pageable host memory");
  return text;
}

Status enqueue(void* stream, std::function<void()> op) {
  makeContext();
  Stream* s = Streams::get().find(stream);
  if (s == nullptr) return badStream(stream);
  s->push(std::move(op));
  return Status::ok();
}

Status drain(void* stream) {
  Stream* s = Streams::get().find(stream);
  if (s == nullptr) return badStream(stream);
  s->waitFor(s->queued());
  return Status::ok();
}

void drainAll() {
  for (Stream* s : Streams::get().all()) s->waitFor(s->queued());
}

namespace {
std::atomic<bool> refusingWaits{false};
}  // namespace

bool refusingStreamWaits() { return refusingWaits.load(); }

void refuseStreamWaits(bool on) { refusingWaits.store(on); }

void shareQueues(int n) {
  std::lock_guard<std::mutex> lock(Queue::sharedMu());
  Queue::shared() = std::max(0, n);
}

}  // namespace emu

Status checkStream(void* stream) {
  if (emu::Streams::get().find(stream) == nullptr) {
    return Status(braidInvalidArgument, "cudaStreamQuery rejects it (emulated GPU: not a stream)");
  }
  return Status::ok();
}

Status streamSynchronize(void* stream) {
  emu::Stream* s = emu::Streams::get().find(stream);
  if (s != nullptr && s->breakCapture()) {
    return emu::emulated("streamSynchronize of a stream that is capturing a graph");
  }
  BRAID_TRY(emu::drain(stream));
  return emu::stickyFault();
}

Expected<void*> streamCreate() {
  emu::makeContext();
  return static_cast<void*>(emu::Streams::get().add());
}

Status streamDestroy(void* stream) {
  emu::Stream* s = emu::Streams::get().find(stream);
  if (stream == nullptr || s == nullptr || !emu::Streams::get().remove(stream)) {
    return emu::badStream(stream);
  }
  s->retire();  // as CUDA's: queued work still runs
  return Status::ok();
}

Expected<bool> streamCapturing(void* stream) {
  emu::Stream* s = emu::Streams::get().find(stream);
  if (s == nullptr) return emu::badStream(stream);
  return s->capturing();
}

Status streamBeginCapture(void* stream, bool) {
  emu::Stream* s = emu::Streams::get().find(stream);
  if (s == nullptr || stream == nullptr) return emu::badStream(stream);
  if (!s->beginCapture()) return emu::emulated("streamBeginCapture: already capturing");
  return Status::ok();
}

// A graph: the operations its capture recorded, each with the values it was given then.
Expected<void*> streamEndCapture(void* stream) {
  emu::Stream* s = emu::Streams::get().find(stream);
  if (s == nullptr) return emu::badStream(stream);
  bool invalidated = false;
  auto graph = std::make_unique<std::vector<std::function<void()>>>();
  if (!s->endCapture(&invalidated, graph.get())) {
    return emu::emulated("streamEndCapture: not capturing");
  }
  if (invalidated) return emu::emulated("streamEndCapture: the capture was invalidated");
  return static_cast<void*>(graph.release());
}

Status graphLaunch(void* graph, void* stream) {
  emu::Stream* s = emu::Streams::get().find(stream);
  if (s == nullptr) return emu::badStream(stream);
  if (graph == nullptr) return emu::emulated("graphLaunch: no graph");
  for (const auto& op : *static_cast<std::vector<std::function<void()>>*>(graph)) s->push(op);
  return Status::ok();
}

Status graphDestroy(void* graph) {
  delete static_cast<std::vector<std::function<void()>>*>(graph);
  return Status::ok();
}

Expected<bool> streamIdle(void* stream) {
  emu::Stream* s = emu::Streams::get().find(stream);
  if (s == nullptr) return emu::badStream(stream);
  if (s->breakCapture()) return emu::emulated("streamIdle of a stream that is capturing a graph");
  return s->finished(s->queued());
}

Status copyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  bool overrun = false;
  const emu::Region from = emu::regionOf(src, bytes, &overrun);
  if (overrun) return emu::emulated(emu::unreachable("a copy's source", src, bytes));
  const emu::Region to = emu::regionOf(dst, bytes, &overrun);
  if (overrun) return emu::emulated(emu::unreachable("a copy's destination", dst, bytes));
  void* dstAt = emu::reach(dst);  // as the device reaches them
  const void* srcAt = emu::reach(src);
  if (from == emu::Region::kPageable) {
    // CUDA synchronises the stream, then stages the pageable data: the call returns with
    // the stream's earlier work done and the data taken.
    BRAID_TRY(emu::drain(stream));
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    BRAID_TRY(emu::enqueue(
        stream, [dstAt, staged] { std::memcpy(dstAt, staged->data(), staged->size()); }));
  } else {
    BRAID_TRY(emu::enqueue(stream, [dstAt, srcAt, bytes] { std::memmove(dstAt, srcAt, bytes); }));
  }
  // To pageable memory CUDA's copy returns once it is done.
  return to == emu::Region::kPageable ? emu::drain(stream) : Status::ok();
}

Status memsetAsync(void* dst, int value, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  std::string why = emu::unreachable("memset of", dst, bytes);
  if (!why.empty()) return emu::emulated(why);
  return emu::enqueue(stream, [=, at = emu::reach(dst)] { std::memset(at, value, bytes); });
}

Expected<void*> eventCreate() {
  emu::makeContext();
  auto* e = new emu::Event;
  std::lock_guard<std::mutex> lock(emu::eventsMu);
  emu::events->insert(e);
  return static_cast<void*>(e);
}

Status eventDestroy(void* event) {
  emu::makeContext();
  std::lock_guard<std::mutex> lock(emu::eventsMu);
  if (emu::events->erase(static_cast<emu::Event*>(event)) == 0) {
    return emu::emulated("eventDestroy of an unknown event");
  }
  emu::destroyedEvents->push_back(static_cast<emu::Event*>(event));
  return Status::ok();
}

Status eventRecord(void* event, void* stream) {
  emu::Event* e = emu::findEvent(event);
  emu::Stream* s = emu::Streams::get().find(stream);
  if (e == nullptr) return emu::emulated("eventRecord of an unknown event");
  if (s == nullptr) return emu::badStream(stream);
  std::lock_guard<std::mutex> lock(e->mu);
  e->stream = s;
  e->at = s->queued();
  return Status::ok();
}

Status streamWaitEvent(void* stream, void* event) {
  emu::Event* e = emu::findEvent(event);
  if (e == nullptr) return emu::emulated("streamWaitEvent on an unknown event");
  emu::Stream* recorded = nullptr;
  uint64_t at = 0;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    recorded = e->stream;
    at = e->at;
  }
  if (recorded == nullptr) return Status::ok();  // never recorded: nothing to wait for
  return emu::enqueue(stream, [recorded, at] { recorded->waitFor(at); });
}

Status eventSynchronize(void* event) {
  emu::Event* e = emu::findEvent(event);
  if (e == nullptr) return emu::emulated("eventSynchronize of an unknown event");
  std::lock_guard<std::mutex> lock(e->mu);
  if (e->stream != nullptr) e->stream->waitFor(e->at);
  return emu::stickyFault();
}

Expected<bool> eventDone(void* event) {
  emu::Event* e = emu::findEvent(event);
  if (e == nullptr) return emu::emulated("eventDone of an unknown event");
  std::lock_guard<std::mutex> lock(e->mu);
  return e->stream == nullptr || e->stream->finished(e->at);
}

Status streamWriteValue64(void* stream, void* deviceAddr, uint64_t value) {
  std::string why = emu::unreachable("cuStreamWriteValue64 at", deviceAddr, 8);
  if (!why.empty()) return emu::emulated(why);
  return emu::enqueue(stream, [at = emu::reach(deviceAddr), value] {
    static_cast<std::atomic<uint64_t>*>(at)->store(value, std::memory_order_release);
    futexWakeAll(static_cast<std::atomic<uint32_t>*>(at));
  });
}

Status streamWaitValue64(void* stream, void* deviceAddr, uint64_t value) {
  if (emu::refusingStreamWaits())
    return emu::emulated("cuStreamWaitValue64 refused (a test's fault)");
  std::string why = emu::unreachable("cuStreamWaitValue64 at", deviceAddr, 8);
  if (!why.empty()) return emu::emulated(why);
  return emu::enqueue(stream,
                      [at = emu::reach(deviceAddr), value] { emu::waitAtLeast(at, value); });
}

}  // namespace braid::cuda
