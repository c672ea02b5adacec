// DeviceWindows' set-up and teardown (runtime/device/device_windows.h); the calls
// themselves are in device_windows.cc, the shared page and the watch thread in
// device_windows_watch.cc.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "runtime/device/device_windows.h"  // first of Braid's: the header this file implements

#include "core/clock.h"
#include "core/env.h"
#include "core/futex.h"
#include "core/logging.h"
#include "core/transport.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/cuda/device_call.h"
#include "exec/cuda/staging.h"
#include "runtime/communicator.h"
#include "runtime/device/device_order.h"
#include "runtime/host_calls.h"
#include "transports/registry.h"

namespace braid {
namespace {

using algo::Collective;

constexpr size_t kNameBytes = 64;

// What each rank tells the others at set-up (all-gathered as bytes).
struct SetupRecord {
  int32_t ok;      // 1: this rank's window exists
  int32_t device;  // the CUDA device it lives on (this process's numbering)
  uint64_t halfBytes, slotBytes, graphBytes;  // its layout, which every rank must share
  cuda::DeviceUuid uuid;
  cuda::IpcHandle handle;
  char flagsName[kNameBytes];  // rank 0: the counters' region
  uint64_t process;            // processToken()
  uint64_t address;            // the window, as this process addresses it
};

// Equal in the threads of one process only: a random number drawn once, mixed with the
// pid now (a forked child has the parent's number, not its pid; a pid alone can repeat
// across containers that share a host name).
uint64_t processToken() {
  static const uint64_t drawn = [] {
    std::random_device rd;
    const uint64_t high = rd();
    return (high << 32) ^ static_cast<uint64_t>(rd());
  }();
  return drawn ^ (static_cast<uint64_t>(getpid()) * 0x9E3779B97F4A7C15ull);
}

// Runs `release` now, or on releaseLater's thread when a failed call's stream may hold the
// device (cudaFree and cudaHostUnregister wait for all of it).
void releaseNowOrLater(bool later, std::function<void()> release) {
  if (later) {
    releaseLater(std::move(release));
  } else {
    release();
  }
}

}  // namespace

// The windows of ranks that are threads of one process, which reach each other's by
// address (CUDA IPC does not open a handle in the process that made it). Each rank lets go
// once its own stream's work has finished; the last one frees them all. No barrier at
// teardown, so one thread may destroy its ranks one after another.
// They also share rank 0's mapping of the counters' page and its one registration: one
// address for every rank's release and acquire (a page mapped twice would be registered
// twice, and checkers that follow addresses lose the order between the mappings).
struct DeviceWindows::Local {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<void*> windows;
  bool published = false;               // rank 0 has put its page (or none) here
  std::shared_ptr<SharedRegion> flags;  // rank 0's counters' page
  char* countersDevice = nullptr;       // its registration, made by the first rank
  // Ranks on one GPU: the last value of each counter whose write a rank has enqueued
  // (device_windows.h, "Threads of one process"), and the signal its waiters sleep on.
  std::atomic<uint64_t> enqueued[kEnqueuedWords] = {};
  ChangeSignal enqueuedChanged;
  std::atomic<bool> freeLater{false};  // a rank's communicator failed: releaseLater frees
  ~Local() {
    releaseNowOrLater(freeLater.load(),
                      [countersDevice = countersDevice, flags = flags, windows = windows] {
                        if (countersDevice != nullptr) (void)cuda::hostUnregister(flags->base());
                        for (void* p : windows) (void)cuda::deviceFree(p);
                      });
  }
  // The set-up's shared object, by rank 0's window (live while the object is).
  static std::shared_ptr<Local> join(uint64_t key) {
    static std::mutex mu;
    static auto* live = new std::map<uint64_t, std::weak_ptr<Local>>;
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = live->begin(); it != live->end();) {
      it = it->second.expired() ? live->erase(it) : std::next(it);
    }
    std::shared_ptr<Local> l = (*live)[key].lock();
    if (l == nullptr) {
      l = std::make_shared<Local>();
      (*live)[key] = l;
    }
    return l;
  }
};

std::unique_ptr<DeviceWindows> DeviceWindows::create(braidComm* comm, bool forPointToPoint) {
  Comm& c = *comm->comm;
  auto refuse = [](const std::string& why) {
    BRAID_INFO("device windows (CUDA IPC) off: %s; device buffers are staged through host memory",
               why.c_str());
    return std::unique_ptr<DeviceWindows>();
  };
  if (envInt("BRAID_CUDA_IPC", 1) == 0) return refuse("BRAID_CUDA_IPC=0");
  if (c.nodes() != 1) return refuse("the ranks span " + std::to_string(c.nodes()) + " nodes");
  if (c.nranks() > cuda::kMaxReduceInputs) {
    return refuse(std::to_string(c.nranks()) + " ranks (at most " +
                  std::to_string(cuda::kMaxReduceInputs) + ")");
  }
  // Windows a send or receive made (a 2-rank communicator, as torch makes one per pair for
  // send/recv, that may never run a collective) default to 2 MiB, not 128: their calls
  // go through the send slots. A collective on them later runs in 1 MiB rounds.
  const int64_t bytes =
      envInt("BRAID_CUDA_WINDOW_BYTES", forPointToPoint ? kPointToPointWindowBytes : kWindowBytes);
  if (bytes < 8192) return refuse("BRAID_CUDA_WINDOW_BYTES is below 8192");

  std::unique_ptr<DeviceWindows> w(new DeviceWindows());
  w->comm_ = &c;
  w->owner_ = comm;
  w->rank_ = c.rank();
  w->nranks_ = c.nranks();
  w->halfBytes_ = static_cast<size_t>(bytes) / 2 / 256 * 256;
  // Set, it decides one-shot or two-shot alone (select/device_choice.h).
  w->twoShotBytes_ = envString("BRAID_CUDA_TWO_SHOT_BYTES").empty()
                         ? -1
                         : std::max<int64_t>(0, envInt("BRAID_CUDA_TWO_SHOT_BYTES", 0));
  const std::string waits = envString("BRAID_CUDA_WAITS");
  if (waits != "stream" && waits != "kernel") {
    return refuse("BRAID_CUDA_WAITS is '" + waits + "' (stream or kernel)");
  }
  w->kernelWaits_ = waits == "kernel";
  // The captured calls' region (device_windows.h), at most a half.
  const int64_t graph = envInt("BRAID_CUDA_GRAPH_BYTES", kGraphRegionBytes);
  if (graph < 0) return refuse("BRAID_CUDA_GRAPH_BYTES is negative");
  w->graphBytes_ = std::min(static_cast<size_t>(graph) / 256 * 256, w->halfBytes_);
  const int64_t slot = envInt("BRAID_CUDA_P2P_SLOT_BYTES", 4 << 20);
  if (slot < 4096) return refuse("BRAID_CUDA_P2P_SLOT_BYTES is below 4096");
  w->slotBytes_ = static_cast<size_t>(slot) / 256 * 256;
  w->sent_.reset(new std::atomic<uint64_t>[static_cast<size_t>(w->nranks_)]());
  w->received_.reset(new std::atomic<uint64_t>[static_cast<size_t>(w->nranks_)]());
  w->windows_.assign(static_cast<size_t>(w->nranks_), nullptr);
  // The counters' page is a shm region (the registry's shm transport makes and maps it).
  Expected<std::unique_ptr<Transport>> shm = transport::makeTransport("shm");
  if (!shm.isOk()) return refuse(shm.status().message());
  w->shm_ = std::move(shm).value();

  // This rank's window and its handle (rank 0: also the counters' region); a failure is
  // told to the others, not returned.
  SetupRecord mine{};
  std::string why;
  Expected<int> device = cuda::currentDevice();
  Expected<cuda::DeviceUuid> uuid = device.isOk() ? cuda::deviceUuid(device.value())
                                                  : Expected<cuda::DeviceUuid>(device.status());
  Expected<void*> mem = uuid.isOk() ? cuda::deviceAlloc(2 * w->halfBytes_ +
                                                        static_cast<size_t>(w->nranks_) * 2 *
                                                            (w->slotBytes_ + kGraphSlotBytes) +
                                                        w->graphBytes_)
                                    : uuid.status();
  if (mem.isOk()) {
    w->own_ = mem.value();
    Expected<cuda::IpcHandle> h = cuda::ipcHandle(w->own_);
    mine.process = processToken();
    mine.address = reinterpret_cast<uint64_t>(w->own_);
    if (h.isOk()) {
      mine.ok = 1;
      mine.halfBytes = w->halfBytes_;
      mine.slotBytes = w->slotBytes_;
      mine.graphBytes = w->graphBytes_;
      mine.device = device.value();
      mine.uuid = uuid.value();
      mine.handle = h.value();
    } else {
      why = h.status().message();
    }
  } else {
    why = mem.status().message();
  }
  if (w->rank_ == 0 && why.empty()) {
    Expected<std::unique_ptr<SharedRegion>> r = w->shm_->createRegion(kFlagsBytes);
    if (r.isOk() && r.value()->name().size() < kNameBytes) {
      w->flags_ = std::move(r).value();
      // Every graph slot starts freed (exec/cuda/device_program.h), before any rank maps it.
      for (int i = 0; i < 8 * 8 * 2; ++i) word(w->flags_->base(), kFreedAt, i).store(1);
      std::memcpy(mine.flagsName, w->flags_->name().data(), w->flags_->name().size());
    } else {
      why = r.isOk() ? "the counters' region name is too long" : r.status().message();
    }
  }
  std::vector<SetupRecord> all(static_cast<size_t>(w->nranks_));
  Call gather;
  gather.collective = Collective::kAllGather;
  gather.send = &mine;
  gather.recv = all.data();
  gather.count = sizeof(SetupRecord);
  gather.datatype = braidUint8;
  Status st = runOpsLocked(comm, &gather, 1);
  if (!st.isOk()) return refuse("exchanging window handles failed: " + st.message());

  // Map every peer's window (CUDA refuses where the devices have no peer access); ranks
  // that are all threads of this process take each other's by address.
  bool together = true;
  for (const SetupRecord& r : all) together = together && r.ok == 1 && r.process == mine.process;
  if (together) {
    w->local_ = Local::join(all[0].address);
    std::lock_guard<std::mutex> lock(w->local_->mu);
    w->local_->windows.push_back(w->own_);
    if (w->rank_ == 0) {  // no other process opens it by name
      if (w->flags_ != nullptr) w->flags_->unlinkName();
      w->local_->flags = std::shared_ptr<SharedRegion>(std::move(w->flags_));
      w->local_->published = true;
      w->local_->cv.notify_all();
    }
  }
  w->oneDevice_ = true;
  for (int q = 0; q < w->nranks_ && why.empty(); ++q) {
    const SetupRecord& r = all[static_cast<size_t>(q)];
    if (r.ok == 1 && std::memcmp(r.uuid.bytes, mine.uuid.bytes, sizeof(mine.uuid.bytes)) != 0) {
      w->oneDevice_ = false;
    }
    if (q == w->rank_) {
      w->windows_[static_cast<size_t>(q)] = static_cast<char*>(w->own_);
    } else if (r.ok != 1) {
      why = "rank " + std::to_string(q) + " has no window";
    } else if (r.halfBytes != mine.halfBytes || r.slotBytes != mine.slotBytes ||
               r.graphBytes != mine.graphBytes) {
      why = "rank " + std::to_string(q) + "'s window has halves of " + std::to_string(r.halfBytes) +
            " bytes, send slots of " + std::to_string(r.slotBytes) + " and a graph region of " +
            std::to_string(r.graphBytes) + ", this rank's " + std::to_string(mine.halfBytes) +
            ", " + std::to_string(mine.slotBytes) + " and " + std::to_string(mine.graphBytes) +
            " (BRAID_CUDA_WINDOW_BYTES, BRAID_CUDA_P2P_SLOT_BYTES and BRAID_CUDA_GRAPH_BYTES "
            "must agree, and the first device call on a 2-rank communicator must be a "
            "collective on both ranks or a send/recv on both)";
    } else if (together) {
      Status peer = cuda::enablePeerAccess(r.device);
      if (peer.isOk()) {
        w->windows_[static_cast<size_t>(q)] = reinterpret_cast<char*>(r.address);
      } else {
        why = "reaching rank " + std::to_string(q) + "'s window: " + peer.message();
      }
    } else {
      Expected<void*> p = cuda::ipcOpen(r.handle);
      if (p.isOk()) {
        w->windows_[static_cast<size_t>(q)] = static_cast<char*>(p.value());
      } else {
        why = "mapping rank " + std::to_string(q) + "'s window: " + p.status().message();
      }
    }
  }
  if (together) w->own_ = nullptr;  // Local frees it
  // The counters: rank 0's region, mapped by all, page-locked for the devices; then one
  // barrier's stream operations on a stream of our own, on this rank's probe word, to
  // learn the driver takes them. Waiting for them to run is bounded: a stream the caller
  // holds (its own work may wait on what follows this call) can keep the device from
  // running them, and set-up must not wait for it.
  SharedRegion* page = w->flags_.get();
  void* registered = nullptr;  // threads of one process: the page's one registration
  if (why.empty() && together) {
    Local& l = *w->local_;
    std::unique_lock<std::mutex> lock(l.mu);
    // Rank 0 publishes right after the exchange above, in this process.
    l.cv.wait_for(lock, std::chrono::milliseconds(c.config().timeoutMs),
                  [&] { return l.published; });
    if (l.flags == nullptr) {
      why = "rank 0 has no barrier counters";
    } else if (l.countersDevice == nullptr) {
      Expected<void*> dev = cuda::hostRegister(l.flags->base(), kFlagsBytes);
      if (dev.isOk()) {
        l.countersDevice = static_cast<char*>(dev.value());
      } else {
        why = "page-locking the barrier counters: " + dev.status().message();
      }
    }
    page = l.flags.get();
    registered = l.countersDevice;
  } else if (why.empty() && w->rank_ != 0) {
    const char* name = all[0].flagsName;
    Expected<std::unique_ptr<SharedRegion>> r =
        w->shm_->openRegion(std::string(name, strnlen(name, kNameBytes)), kFlagsBytes);
    if (r.isOk()) {
      w->flags_ = std::move(r).value();
      page = w->flags_.get();
    } else {
      why = "mapping the barrier counters: " + r.status().message();
    }
  }
  if (why.empty()) {
    w->counters_ = static_cast<Counter*>(page->base());
    Expected<void*> dev = registered != nullptr ? Expected<void*>(registered)
                                                : cuda::hostRegister(page->base(), kFlagsBytes);
    if (dev.isOk()) {
      w->countersDevice_ = static_cast<char*>(dev.value());
      Expected<void*> s = cuda::streamCreate();
      Status probe = s.isOk() ? Status::ok() : s.status();
      char* word = w->countersDevice_ + kProbeAt + static_cast<size_t>(w->rank_) * 8;
      if (probe.isOk()) probe = cuda::streamWriteValue64(s.value(), word, 1);
      if (probe.isOk()) probe = cuda::streamWaitValue64(s.value(), word, 1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      bool ran = false;
      while (probe.isOk() && !ran) {
        Expected<bool> idle = cuda::streamIdle(s.value());
        if (!idle.isOk()) {
          probe = idle.status();
        } else if (!(ran = idle.value())) {
          if (std::chrono::steady_clock::now() > until) break;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      }
      if (probe.isOk() && !ran) {
        BRAID_INFO(
            "device windows: the probe of the stream memory operations has not run "
            "after 2 s (is a stream of this process held?); going on");
      }
      if (s.isOk()) (void)cuda::streamDestroy(s.value());  // freed once its work has run
      if (!probe.isOk()) why = "stream memory operations: " + probe.message();
    } else {
      w->counters_ = nullptr;
      why = "page-locking the barrier counters: " + dev.status().message();
    }
  }
  // Ranks that are threads of one process share its CUDA context, where an allocation may
  // wait for every stream, a peer's held at a barrier for this very rank too: one thread
  // driving several ranks would hang at a call's first scratch. The calls' scratch, at most
  // half a window, is allocated now, before any rank enqueues.
  if (why.empty() && together) {
    Status grown = w->growScratch(w->halfBytes_);
    if (!grown.isOk()) why = "allocating the scratch buffer: " + grown.message();
  }
  w->order_ = comm->deviceOrder;
  // Every rank uses the windows, or none does.
  uint8_t ok = why.empty() ? 1 : 0;
  Call agree;
  agree.send = &ok;
  agree.recv = &ok;
  agree.count = 1;
  agree.datatype = braidUint8;
  agree.op = braidMin;
  st = runOpsLocked(comm, &agree, 1);
  if (w->flags_ != nullptr) w->flags_->unlinkName();  // every rank has it mapped, or gave up
  if (!st.isOk() || ok == 0) {
    // Nothing ran: let go of the peers' windows, and (while the communicator works) wait
    // until every rank has, before the destructor frees this rank's.
    for (int q = 0; q < w->nranks_; ++q) {
      char*& p = w->windows_[static_cast<size_t>(q)];
      if (p != nullptr && q != w->rank_ && w->local_ == nullptr) (void)cuda::ipcClose(p);
      p = nullptr;
    }
    if (st.isOk()) {
      uint8_t done = 1;
      agree.send = &done;
      agree.recv = &done;
      (void)runOpsLocked(comm, &agree, 1);
    }
    w->released_ = true;
    return refuse(!why.empty() ? why : !st.isOk() ? st.message() : "a peer could not map them");
  }
  // Peers that are threads of this process: waits for what they write are ordered after
  // their writes (device_windows.h), on this GPU (they share its context's hardware queues) and
  // on others (another communicator's ranks may share both GPUs' queues).
  if (w->local_ != nullptr) {
    w->enqueued_ = w->local_->enqueued;
    w->enqueuedChanged_ = &w->local_->enqueuedChanged;
    for (int q = 0; q < w->nranks_; ++q) {
      const cuda::DeviceUuid& u = all[static_cast<size_t>(q)].uuid;
      if (q != w->rank_ && std::memcmp(u.bytes, mine.uuid.bytes, sizeof(u.bytes)) == 0) {
        w->sharesGpu_ = true;
      }
    }
  }
  w->watcher_ = std::thread([raw = w.get()] { raw->watch(); });
  BRAID_INFO(
      "device windows (%s): %zu bytes per rank (graph region %zu) on device %d, %d ranks%s; "
      "barriers on the GPU (%s)",
      w->local_ != nullptr ? "threads of one process, by address" : "CUDA IPC", 2 * w->halfBytes_,
      w->graphBytes_, mine.device, w->nranks_, w->oneDevice_ ? ", all on this one GPU" : "",
      w->kernelWaits_ ? "waits are kernels" : "stream memory waits");
  return w;
}

DeviceWindows::~DeviceWindows() {
  const bool started = watcher_.joinable();
  const bool aborted = started && comm_->aborted();
  if (started && (comm_->aborted() || comm_->failed())) {
    release(comm_->failed() ? comm_->asyncError() : Status(braidInvalidUsage, "aborted"));
  }
  // braidCommAbort does not wait for the streams (a stream may be held by the caller's own
  // work); what their queued work may still touch stays allocated instead. Nor does a
  // failed or released communicator's destroy: its frees wait for the streams on
  // releaseLater's thread (below).
  const bool broken = started && (comm_->failed() || released());
  Status st = started && !aborted && !broken ? flush() : Status::ok();
  if (started) {
    {
      std::lock_guard<std::mutex> lock(watchMu_);
      stopping_ = true;
    }
    watchCv_.notify_all();
    watcher_.join();
  }
  if (aborted) {  // queued device work may still use the windows and the counters
    BRAID_INFO(
        "device windows: aborted; this rank's window, its mappings of the peers' and the "
        "counters stay until exit");
    keepUntilExit(std::shared_ptr<Transport>(std::move(shm_)));
    keepUntilExit(std::shared_ptr<SharedRegion>(std::move(flags_)));
    if (local_ != nullptr) keepUntilExit(local_);
    return;
  }
  for (int q = 0; q < nranks_ && local_ == nullptr; ++q) {
    char* p = windows_.empty() ? nullptr : windows_[static_cast<size_t>(q)];
    if (p != nullptr && q != rank_) (void)cuda::ipcClose(p);
  }
  // Every rank has let go of every window before any is freed (freeing memory a peer
  // still maps is undefined in CUDA IPC): one more barrier, on the host.
  // Threads of one process skip it: this rank's stream is done with every window
  // (flushed), and local_ lets go with this object, the last rank's freeing them all (a
  // stream that may still run keeps them until exit).
  bool clean = started && st.isOk() && !released() && local_ == nullptr;
  if (local_ != nullptr && started && !st.isOk()) keepUntilExit(local_);
  if (clean) {
    const uint64_t e = epoch_.load() + 1;
    counters_[rank_].value.store(e, std::memory_order_release);
    Deadline deadline = comm_->deadline();
    const auto warnAt = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    bool warned = false;
    for (int q = 0; q < nranks_ && clean; ++q) {
      while (counters_[q].value.load(std::memory_order_acquire) < e) {
        if (deadline.expired() || deadline.cancelled() || comm_->failed()) {
          clean = false;
          break;
        }
        if (!warned && std::chrono::steady_clock::now() > warnAt) {
          warned = true;  // ranks that destroy their communicators in different orders
          BRAID_WARN(
              "destroying the communicator has waited 5 s for %s to destroy its own "
              "(this rank's device window is freed only once no peer maps it); waiting "
              "up to BRAID_TIMEOUT_MS=%lld ms in all",
              comm_->describePeer(q).c_str(), static_cast<long long>(comm_->config().timeoutMs));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  // A failed communicator's frees wait for no stream: cudaFree and cudaHostUnregister wait
  // for the whole device, where a stream of a failed call may be held by the application
  // (another rank's, of a thread of this process, too); releaseLater's thread frees them.
  // Asked again: a peer may have released the barriers during the host barrier above.
  const bool later = broken || (started && (comm_->failed() || released()));
  if (later && local_ != nullptr) local_->freeLater = true;
  if (later) order_->holdReleases();  // this rank's calls run first
  std::vector<void*> frees;
  if (own_ != nullptr) {
    if (clean || !started) {
      frees.push_back(own_);
    } else {
      BRAID_INFO("device windows: leaving this rank's window allocated (a peer may still map it)");
    }
  }
  for (void* p : {scratch_, stage_, scaled_}) {
    if (p != nullptr) frees.push_back(p);
  }
  frees.insert(frees.end(), retired_.begin(), retired_.end());
  std::shared_ptr<SharedRegion> flags;  // else Local's one registration
  if (countersDevice_ != nullptr && local_ == nullptr) flags = std::move(flags_);
  releaseNowOrLater(later, [frees, flags] {
    for (void* p : frees) (void)cuda::deviceFree(p);
    if (flags != nullptr) (void)cuda::hostUnregister(flags->base());
  });
}

}  // namespace braid
