#include "exec/cuda/staging.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/device.h"

namespace braid {
namespace {

constexpr size_t kAlign = 256;
constexpr size_t kMinPinned = size_t{4} << 20;
constexpr size_t kMaxPooled = 4;

size_t roundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

int callersDevice() {  // -1: none (no CUDA)
  Expected<int> device = cuda::currentDevice();
  return device.isOk() ? device.value() : -1;
}

// Runs releases (frees, unregistrations) on a thread of its own: cudaFree, cudaFreeHost
// and cudaHostUnregister wait for the whole device, and the threads that drop memory (a
// call being issued, the staged proxy, a failed communicator's destroy) must not wait for
// streams that may be waiting for them. Each job runs with its caller's current device
// made current (the thread's own default, device 0, would get a context of its own on a
// GPU the process does not use). Nothing waits for this thread; what it has not released
// at exit the process's end frees.
// On a GPU such a free also holds the process's other CUDA calls while it waits (an
// event destroyed on another thread waits behind it for a stream the application holds):
// so no job runs while work a failed call left on a stream is unfinished (releaseAfter),
// polled without blocking in CUDA.
class Reaper {
 public:
  static Reaper& get() {
    static auto* r = new Reaper();
    return *r;
  }
  void run(std::function<void()> job) {
    const int device = callersDevice();
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      started_ = true;
      std::thread([this] { loop(); }).detach();
    }
    queue_.push_back({device, std::move(job)});
    cv_.notify_one();
  }
  void after(std::function<bool()> finished) {
    const int device = callersDevice();
    std::lock_guard<std::mutex> lock(mu_);
    unfinished_.push_back({device, std::move(finished)});
  }

 private:
  struct Job {
    int device;
    std::function<void()> release;
  };
  struct Unfinished {
    int device;
    std::function<bool()> finished;
  };
  // Returns (the lock held) once every unfinished call has finished: polled, from 100 us
  // apart up to 20 ms. A check's last copy goes on this thread, with its device current.
  void awaitUnfinished(std::unique_lock<std::mutex>& lock) {
    for (auto pause = std::chrono::microseconds(100); !unfinished_.empty();
         pause = std::min(pause * 2, std::chrono::microseconds(20000))) {
      std::vector<Unfinished> checks = std::move(unfinished_);
      unfinished_.clear();
      lock.unlock();
      std::vector<Unfinished> still;
      for (Unfinished& u : checks) {
        if (u.device >= 0) (void)cuda::setCurrentDevice(u.device);
        if (!u.finished()) {
          still.push_back(std::move(u));
        } else {
          u.finished = nullptr;
        }
      }
      checks.clear();
      if (!still.empty()) std::this_thread::sleep_for(pause);
      lock.lock();
      for (Unfinished& u : still) unfinished_.push_back(std::move(u));
    }
  }
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty(); });
      awaitUnfinished(lock);
      Job job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      if (job.device >= 0) (void)cuda::setCurrentDevice(job.device);
      job.release();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<Unfinished> unfinished_;
  bool started_ = false;
};

// Pinned buffers by size: page-locking is slow (milliseconds for large buffers), so a
// buffer is reused by any later call that fits in it. Up to kMaxPooled wait in the pool;
// they live until the process exits (freeing them at static destruction could run after
// the CUDA runtime has gone).
class PinnedPool {
 public:
  Expected<void*> take(size_t bytes, size_t* got) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.lower_bound(bytes);
      if (it != free_.end()) {
        *got = it->first;
        void* p = it->second;
        free_.erase(it);
        return p;
      }
    }
    size_t size = std::max(kMinPinned, roundUp(bytes, kMinPinned));
    BRAID_ASSIGN_OR_RETURN(void* p, cuda::pinnedAlloc(size));
    *got = size;
    return p;
  }

  void give(void* p, size_t bytes) {
    void* drop = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.emplace(bytes, p);
      if (free_.size() > kMaxPooled) {  // keep the larger ones
        drop = free_.begin()->second;
        free_.erase(free_.begin());
      }
    }
    if (drop != nullptr) freePinnedLater(drop);
  }

 private:
  std::mutex mu_;
  std::multimap<size_t, void*> free_;
};

PinnedPool& pool() {
  static auto* p = new PinnedPool();
  return *p;
}

}  // namespace

void releaseLater(std::function<void()> release) { Reaper::get().run(std::move(release)); }

void releaseAfter(std::function<bool()> finished) { Reaper::get().after(std::move(finished)); }

void awaitReleases() {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> ran = done->get_future();
  releaseLater([done] { done->set_value(); });
  ran.wait();
}

void freePinnedLater(void* p) {
  releaseLater([p] { (void)cuda::pinnedFree(p); });
}

std::vector<StagedSpan> mergeOverlapping(std::vector<StagedRegion> regions) {
  std::sort(regions.begin(), regions.end(),
            [](const StagedRegion& a, const StagedRegion& b) { return a.ptr < b.ptr; });
  std::vector<StagedSpan> spans;
  for (const StagedRegion& r : regions) {
    if (r.bytes == 0) continue;
    auto lo = reinterpret_cast<uintptr_t>(r.ptr);
    if (!spans.empty() && lo < spans.back().start + spans.back().bytes) {
      spans.back().bytes = std::max(spans.back().bytes, lo + r.bytes - spans.back().start);
    } else {
      spans.push_back({lo, r.bytes});
    }
  }
  return spans;
}

Expected<StagedBuffers> StagedBuffers::stageIn(const std::vector<StagedRegion>& regions,
                                               void* stream) {
  StagedBuffers staged;
  std::vector<StagedRegion> device;
  for (const StagedRegion& r : regions) {
    if (r.bytes == 0 || r.ptr == nullptr) continue;
    if (cuda::memoryKind(r.ptr) != cuda::MemoryKind::kDevice) continue;
    device.push_back(r);
    if (r.written) staged.written_.push_back(r);
  }
  // Overlapping device regions (in-place layouts) become one span.
  size_t total = 0;
  for (const StagedSpan& m : mergeOverlapping(std::move(device))) {
    staged.spans_.push_back({m.start, m.bytes, nullptr});
    total += roundUp(m.bytes, kAlign);
  }
  if (total > 0) {
    BRAID_ASSIGN_OR_RETURN(staged.pinned_, pool().take(total, &staged.pinnedBytes_));
    char* at = static_cast<char*>(staged.pinned_);
    for (Span& s : staged.spans_) {
      s.host = at;
      at += roundUp(s.bytes, kAlign);
      BRAID_TRY(cuda::copyAsync(s.host, reinterpret_cast<const void*>(s.device), s.bytes, stream)
                    .withContext("staging a device buffer into host memory: "));
    }
  }
  return staged;
}

StagedBuffers::StagedBuffers(StagedBuffers&& other) noexcept
    : spans_(std::move(other.spans_)),
      written_(std::move(other.written_)),
      pinned_(other.pinned_),
      pinnedBytes_(other.pinnedBytes_) {
  other.pinned_ = nullptr;
  other.pinnedBytes_ = 0;
}

StagedBuffers::~StagedBuffers() {
  if (pinned_ != nullptr) pool().give(pinned_, pinnedBytes_);
}

const void* StagedBuffers::hostOf(const void* p) const {
  auto a = reinterpret_cast<uintptr_t>(p);
  for (const Span& s : spans_) {
    if (a >= s.device && a < s.device + s.bytes) return s.host + (a - s.device);
  }
  return p;
}

Status StagedBuffers::copyBack(void* stream) {
  for (const StagedRegion& r : written_) {
    BRAID_TRY(cuda::copyAsync(const_cast<void*>(r.ptr), hostOf(r.ptr), r.bytes, stream)
                  .withContext("copying a result back to device memory: "));
  }
  return Status::ok();
}

}  // namespace braid
