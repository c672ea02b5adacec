// The emulated GPU's work: streams as worker threads, events, copies, the driver's stream
// memory operations and the copy and reduce kernels.
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

// BRAID_EMU_CONNECTIONS=N: the process's streams share N hardware queues, as a CUDA
// context's streams share CUDA_DEVICE_MAX_CONNECTIONS (8 by default): stream k (in the
// order they were made, the default stream among them) goes to queue k % N. A queue runs
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
  // Queue k % N, or nullptr when streams run on their own (N = 0).
  static Queue* forStream(uint64_t k) {
    std::lock_guard<std::mutex> lock(sharedMu());
    const int n = shared();
    if (n == 0) return nullptr;
    std::vector<Queue*>& queues = *pool();  // made as needed, never destroyed
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
  static std::vector<Queue*>* pool() {
    static auto* queues = new std::vector<Queue*>;
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
    auto* s = new Stream(Queue::forStream(made_++));
    live_.insert(s);
    return s;
  }
  // The live stream `handle` names (nullptr: the default stream), or nullptr.
  Stream* find(void* handle) {
    std::lock_guard<std::mutex> lock(mu_);
    if (handle == nullptr) {
      if (default_ == nullptr) default_ = new Stream(Queue::forStream(made_++));
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
  uint64_t made_ = 0;  // streams made so far, the default one too
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

// The 8 bytes at `addr` reach `value`, compared as a wrapping counter (as
// CU_STREAM_WAIT_VALUE_GEQ does): a brief spin, then futex sleeps. Writers here wake the
// word; host code that stores without a wake is seen within a millisecond.
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

// Why a kernel or memory operation may not touch [p, p + bytes), or "".
std::string unreachable(const char* what, const void* p, size_t bytes) {
  bool overrun = false;
  if (bytes == 0 || regionOf(p, bytes, &overrun) != Region::kPageable) return "";
  char text[160];
  snprintf(text, sizeof(text), "%s %p (%zu bytes) %s", what, p, bytes,
           overrun ? "runs past the end of its allocation" : "is pageable host memory");
  return text;
}

}  // namespace

Status enqueue(void* stream, std::function<void()> op) {
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

// CUDA's lazy loading: the kernels this process has loaded (every one once loadKernels ran).
struct Loaded {
  std::mutex mu;
  std::set<std::string> kernels;
  bool all = false;
};
Loaded& loaded() {
  static auto* l = new Loaded;
  return *l;
}

// A kernel's first launch loads it, and waits for every stream first.
void loadAtFirstLaunch(const std::string& kernel) {
  Loaded& l = loaded();
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (l.all || !l.kernels.insert(kernel).second) return;
  }
  drainAll();
}
}  // namespace

void refuseStreamWaits(bool on) { refusingWaits.store(on); }

void shareQueues(int n) {
  std::lock_guard<std::mutex> lock(Queue::sharedMu());
  Queue::shared() = std::max(0, n);
}

void forgetLoadedKernels() {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  l.kernels.clear();
  l.all = false;
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

Expected<void*> streamCreate() { return static_cast<void*>(emu::Streams::get().add()); }

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
  auto* e = new emu::Event;
  std::lock_guard<std::mutex> lock(emu::eventsMu);
  emu::events->insert(e);
  return static_cast<void*>(e);
}

Status eventDestroy(void* event) {
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

Status streamWriteValue64(void* stream, void* deviceAddr, uint64_t value) {
  std::string why = emu::unreachable("cuStreamWriteValue64 at", deviceAddr, 8);
  if (!why.empty()) return emu::emulated(why);
  return emu::enqueue(stream, [at = emu::reach(deviceAddr), value] {
    static_cast<std::atomic<uint64_t>*>(at)->store(value, std::memory_order_release);
    futexWakeAll(static_cast<std::atomic<uint32_t>*>(at));
  });
}

Status streamWaitValue64(void* stream, void* deviceAddr, uint64_t value) {
  if (emu::refusingWaits.load()) return emu::emulated("cuStreamWaitValue64 refused (a test's fault)");
  std::string why = emu::unreachable("cuStreamWaitValue64 at", deviceAddr, 8);
  if (!why.empty()) return emu::emulated(why);
  return emu::enqueue(stream,
                      [at = emu::reach(deviceAddr), value] { emu::waitAtLeast(at, value); });
}

Status loadKernels() {
  emu::Loaded& l = emu::loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  l.all = true;
  return Status::ok();
}

// A kernel that waits: as streamWaitValue64 (refused too while a test refuses waits), a
// kernel's fault instead of an error where the word is out of the GPU's reach.
Status launchWait(const void* word, uint64_t value, void* stream) {
  if (word == nullptr || reinterpret_cast<uintptr_t>(word) % 8 != 0) {
    return Status(braidInvalidArgument, "wait kernel: the word is NULL or not aligned");
  }
  if (emu::refusingWaits.load()) return emu::emulated("the wait kernel refused (a test's fault)");
  emu::loadAtFirstLaunch("wait");
  std::string why = emu::unreachable("the wait kernel's word", word, 8);
  return emu::enqueue(stream, [why, at = emu::reach(word), value] {
    if (!why.empty()) return emu::fault(why);
    emu::waitAtLeast(at, value);
  });
}

Status launchBump(void* word, void* stream) {
  emu::loadAtFirstLaunch("bump");
  std::string why = emu::unreachable("the bump kernel's word", word, 8);
  return emu::enqueue(stream, [why, to = static_cast<std::atomic<uint64_t>*>(emu::reach(word))] {
    if (!why.empty()) return emu::fault(why);
    to->store(to->load() + 1);
  });
}

Status launchCopy(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  if (dst == nullptr || src == nullptr) {
    return Status(braidInvalidArgument, "copy kernel: a buffer is NULL");
  }
  emu::loadAtFirstLaunch("copy");
  std::string why = emu::unreachable("the copy kernel's source", src, bytes);
  if (why.empty()) why = emu::unreachable("the copy kernel's destination", dst, bytes);
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (why.empty() && d < s + bytes && s < d + bytes) why = "the copy kernel's buffers overlap";
  return emu::enqueue(stream, [=, to = emu::reach(dst), from = emu::reach(src)] {
    if (!why.empty()) return emu::fault(why);
    std::memcpy(to, from, bytes);
  });
}

Status launchReduce(void* dst, const void* const* srcs, int nsrcs, size_t count,
                    braidDataType_t datatype, braidRedOp_t op, int divisor, void* stream) {
  if (static_cast<int>(datatype) < 0 || datatype >= braidNumTypes || static_cast<int>(op) < 0 ||
      op >= braidNumOps || nsrcs < 1 || nsrcs > kMaxReduceInputs || divisor < 1) {
    return Status(braidInvalidArgument, "reduce kernel: bad datatype, op, inputs or divisor");
  }
  if (count == 0) return Status::ok();
  emu::loadAtFirstLaunch("reduce " + std::to_string(datatype) + " " + std::to_string(op));
  const size_t es = datatypeSize(datatype), bytes = count * es;
  std::vector<const void*> in(srcs, srcs + nsrcs);
  std::vector<const void*> reached;  // as the device reaches them
  for (const void* s : in) reached.push_back(emu::reach(s));
  std::string why = emu::unreachable("the reduce kernel's destination", dst, bytes);
  for (const void* s : in) {
    if (s == nullptr || reinterpret_cast<uintptr_t>(s) % es != 0) {
      return Status(braidInvalidArgument, "reduce kernel: a buffer is NULL or not aligned");
    }
    if (why.empty()) why = emu::unreachable("a reduce kernel's input", s, bytes);
    const auto d = reinterpret_cast<uintptr_t>(dst), a = reinterpret_cast<uintptr_t>(s);
    if (why.empty() && d != a && d < a + bytes && a < d + bytes) {
      why = "the reduce kernel's destination overlaps an input partially";
    }
  }
  return emu::enqueue(stream, [=, ins = std::move(reached), out = emu::reach(dst)] {
    if (!why.empty()) return emu::fault(why);
    // Pairwise on the host's kernels into a scratch copy, so dst may be any input.
    const ReduceKernels& k = reduceKernels(datatype, op);
    std::vector<char> acc(bytes);
    if (ins.size() == 1) k.finalize(acc.data(), ins[0], count, divisor);
    for (size_t i = 1; i < ins.size(); ++i) {
      const void* a = i == 1 ? ins[0] : acc.data();
      if (i + 1 == ins.size()) {
        k.reduceFinal(acc.data(), nullptr, a, ins[i], count, divisor);
      } else {
        k.reduce(acc.data(), a, ins[i], count);
      }
    }
    std::memcpy(out, acc.data(), bytes);
  });
}

Status launchScale(void* dst, const void* src, size_t count, braidDataType_t datatype,
                   const void* scalarDevice, const void* scalarValue, void* stream) {
  if (static_cast<int>(datatype) < 0 || datatype >= braidNumTypes ||
      (scalarDevice == nullptr) == (scalarValue == nullptr)) {
    return Status(braidInvalidArgument, "scale kernel: bad datatype, or not one scalar");
  }
  if (count == 0) return Status::ok();
  const size_t es = datatypeSize(datatype), bytes = count * es;
  if (src == nullptr || dst == nullptr || reinterpret_cast<uintptr_t>(src) % es != 0 ||
      reinterpret_cast<uintptr_t>(dst) % es != 0) {
    return Status(braidInvalidArgument, "scale kernel: a buffer is NULL or not aligned");
  }
  emu::loadAtFirstLaunch("scale " + std::to_string(datatype));
  std::string why = emu::unreachable("the scale kernel's source", src, bytes);
  if (why.empty()) why = emu::unreachable("the scale kernel's destination", dst, bytes);
  if (why.empty() && scalarDevice != nullptr) {
    why = emu::unreachable("the scale kernel's scalar", scalarDevice, es);
  }
  unsigned char value[8] = {};
  if (scalarValue != nullptr) std::memcpy(value, scalarValue, es);  // taken at the launch
  const auto d = reinterpret_cast<uintptr_t>(dst), a = reinterpret_cast<uintptr_t>(src);
  if (why.empty() && d != a && d < a + bytes && a < d + bytes) {
    why = "the scale kernel's destination overlaps its source partially";
  }
  return emu::enqueue(stream, [=, to = emu::reach(dst), from = emu::reach(src),
                               scalar = emu::reach(scalarDevice)]() mutable {
    if (!why.empty()) return emu::fault(why);
    if (scalar != nullptr) std::memcpy(value, scalar, es);  // read as it runs
    reduceKernels(datatype, braidSum).scale(to, from, count, value);
  });
}

}  // namespace braid::cuda
