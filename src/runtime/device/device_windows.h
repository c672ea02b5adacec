// DeviceWindows: the direct GPU path for ranks of one node (CUDA IPC), ordered on the
// caller's CUDA stream and returning at once, as NCCL's calls do. docs/gpu.md describes
// it in full; this is the map.
//
// Each rank allocates one device window (BRAID_CUDA_WINDOW_BYTES: two halves, then the
// send slots, the graph slots and the graph region) that every peer maps with CUDA IPC,
// or by address where the ranks are threads of one process. A round copies this rank's
// input into half round % 2, passes a barrier, and the reduce or copy kernels read the
// peers' halves where they lie and write the receive buffer (through device scratch when
// it is not device memory). Which program a collective runs (all-reduce one-shot or
// two-shot, or a lowered schedule) is the cost model's choice (select/device_choice.h).
//
// Barriers run on the GPU: barrier e is a stream write of e to this rank's counter in a
// page-locked shared host page and a stream wait until every peer's counter reaches e.
// Two halves make one barrier per round enough: a rank refills a half only after the next
// round's barrier, which no peer passes before it has read that half. Consecutive calls
// on different streams are ordered by an event. Send/recv use two slots per peer
// (BRAID_CUDA_P2P_SLOT_BYTES) with posted/consumed counters per ordered pair; a group's
// sends and receives, all-to-all-v and BRAID_ALGO's schedules are lowered batches
// (exec/cuda/device_program.h, runtime/device/lowered_schedule.cc).
//
// Captured calls (CUDA graphs) use the replayable flag barriers and graph slots of
// exec/cuda/window_program.h and exec/cuda/device_program.h, run in the graph region when they fit,
// and bump a progress word per replay; the launch's stream orders them, since an event
// recorded outside a capture cannot be waited on inside it.
//
// Never a silent hang: a watch thread releases every barrier of every rank for good (the
// counters jump far ahead) and raises the asynchronous error when a peer misses a barrier,
// a slot or a replay for the timeout, or the communicator failed or was aborted.
//
// Ranks that are threads of one process share a context whose streams share a few
// hardware queues, where a wait enqueued ahead of the write that ends it could block that
// write for good. So a rank enqueues a wait for a counter another thread writes only once
// that write is enqueued (on any GPU: another communicator's ranks may share both GPUs'
// queues), blocking the calling thread for at most the timeout; their captures are
// refused where two share a GPU, as replays cannot be ordered so.
//
// Set-up is collective, at the first device call that can use the windows; if any rank
// cannot, every rank stays on the staged path and INFO says why. (Calls: device_windows.cc;
// set-up and teardown: device_windows_setup.cc; the shared page, the watch thread and
// releasing: device_windows_watch.cc.)
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/call.h"
#include "exec/cuda/device_program.h"
#include "exec/cuda/window_program.h"
#include "runtime/communicator.h"
#include "select/device_choice.h"

namespace braid {

struct ChangeSignal;  // core/futex.h

class DeviceOrder;
class SharedRegion;
class Transport;

class DeviceWindows {
 public:
  // Whether the windows can run `op` at all (decided from what every rank passes alike:
  // the collective, its operation; never from this rank's buffers).
  static bool supports(const Call& op, int nranks);
  // Collective over comm; the caller holds comm->opMu. Null: use the staged path.
  // forPointToPoint: a send or receive on a 2-rank communicator makes them (smaller
  // halves, kPointToPointWindowBytes, unless BRAID_CUDA_WINDOW_BYTES says). The ranks
  // check that their layouts agree; where not, none uses the windows.
  static std::unique_ptr<DeviceWindows> create(braidComm* comm, bool forPointToPoint);
  static constexpr int64_t kWindowBytes = int64_t{128} << 20;
  static constexpr int64_t kPointToPointWindowBytes = int64_t{2} << 20;
  // Waits for this rank's enqueued work, then for every rank to let go of the windows
  // (bounded by the timeout; skipped after a failure, when the window is left allocated
  // rather than freed under a peer that may still map it). Ranks that are all threads of
  // one process do not wait for each other: the last to go frees every window. After an
  // abort it waits for nothing and frees nothing the streams may still touch.
  ~DeviceWindows();
  DeviceWindows(const DeviceWindows&) = delete;
  DeviceWindows& operator=(const DeviceWindows&) = delete;

  // Enqueues ops (collectives supports() takes, sends and receives) on `stream` and
  // returns: collectives in order, then the sends and receives as one lowered batch, so
  // any pattern completes; a send to this rank is
  // a copy to the receive from it that it pairs with, in order. Every collective's choice
  // (select/device_choice.h) is made before anything is enqueued: one that fails (a
  // BRAID_ALGO rule no algorithm serves) is returned with the windows intact. The caller
  // holds comm->opMu.
  // captured: the stream is capturing a CUDA graph (above).
  Status run(const std::vector<Call>& ops, void* stream, bool captured = false);
  // One collective as a lowered schedule of `alg`, or of the loaded algorithm `user` where
  // given (lowered_schedule.cc), which run() picks for a schedule the windows do not
  // program; the caller holds comm->opMu.
  Status runSchedule(const Call& op, algo::Algorithm alg, void* stream,
                     const algo::AlgoFile* user = nullptr);
  static constexpr size_t kGraphSlotBytes = size_t{1} << 20;
  // Captured window calls that fit it run in a region of their own (exec/cuda/window_program.h):
  // 2 barriers instead of 3. BRAID_CUDA_GRAPH_BYTES changes it (0: none; at most a half).
  static constexpr int64_t kGraphRegionBytes = int64_t{8} << 20;
  // Blocks until the work enqueued so far has finished (braidCommFinalize).
  Status flush();
  // What the device choice (select/device_choice.h) needs of the windows, fixed at set-up.
  DeviceShape shape() const { return {nranks_, oneDevice_, halfBytes_, slotBytes_, twoShotBytes_}; }
  // Collectives this rank has enqueued on `e` running `a` (tests read it). Any thread.
  uint64_t ran(DeviceExecutor e, algo::Algorithm a) const {
    return ran_[static_cast<int>(e)][static_cast<int>(a)].load(std::memory_order_relaxed);
  }
  // Collectives this rank has enqueued as a loaded algorithm's lowered schedule. Any thread.
  uint64_t ranLoaded() const { return ranLoaded_.load(std::memory_order_relaxed); }
  // Whether a peer is a thread of this process on this rank's GPU (one CUDA context):
  // calls cannot be captured (waits for what any thread of this process writes are
  // ordered after its writes).
  bool oneContext() const { return sharesGpu_; }
  // Whether the barriers were released (by any rank's watch); the first to see it raises
  // the communicator's error. A stream that passed a released barrier has finished only
  // after the counters show it, so this is current once the caller synchronised. Any
  // thread.
  bool released();
  // The error of a rank whose watch released the barriers: the releasing rank and its
  // reason (from the counters' page), or a generic text when none was written.
  std::string releasedBy() const;

 private:
  // The counters' page: the barrier counters (128 bytes apart), then the send/receive
  // counters posted[s][r] and consumed[s][r] (8 bytes each), then why the barriers were
  // released: the first rank to release writes its error there before any counter shows
  // it, so the others' errors say what happened, not only that a peer released. The
  // second and third pages: the captured calls' flags [set][from][to], each rank's
  // progress, the graph slots' full and freed flags [from][to][j] and the waiting marks
  // [from][to].
  struct alignas(128) Counter {
    std::atomic<uint64_t> value{0};
  };
  struct ReleaseReason {
    std::atomic<uint32_t> by;     // 1 + the rank that claimed it; 0: none yet
    std::atomic<uint32_t> ready;  // 1 once `text` is written
    char text[1016];              // its error, NUL-terminated
  };
  static_assert(sizeof(std::atomic<uint64_t>) == 8, "the GPU writes counters as 8 bytes");
  static constexpr size_t kFlagsBytes = 12288;
  static constexpr size_t kPostedAt = 1024;
  static constexpr size_t kConsumedAt = kPostedAt + 8 * 8 * 8;
  static constexpr size_t kReasonAt = kConsumedAt + 8 * 8 * 8;
  // One word per rank for the set-up's probe of the stream memory operations (not a
  // counter: the probe may run late, after barriers have started).
  static constexpr size_t kProbeAt = kReasonAt + sizeof(ReleaseReason);
  static constexpr size_t kGraphFlagsAt = 4096;
  static constexpr int kFlagSets = 3;  // exec/cuda/window_program.h
  static constexpr size_t kProgressAt = kGraphFlagsAt + kFlagSets * 8 * 8 * 8;
  static constexpr size_t kFullAt = kProgressAt + 8 * 8;
  static constexpr size_t kFreedAt = kFullAt + 8 * 8 * 2 * 8;
  static constexpr size_t kWaitingAt = kFreedAt + 8 * 8 * 2 * 8;
  static_assert(kProbeAt + 8 * 8 <= kGraphFlagsAt && kWaitingAt + 8 * 8 * 8 <= kFlagsBytes);
  ReleaseReason& reason() const {
    return *reinterpret_cast<ReleaseReason*>(reinterpret_cast<char*>(counters_) + kReasonAt);
  }
  // A counter at or past this was released by a watch thread (every wait passes).
  static constexpr uint64_t kReleased = uint64_t{1} << 62;

  DeviceWindows() = default;
  Status runOne(const Call& op, const DeviceChoice& choice, void* stream);
  // Lowers this rank's schedule over the send slots from the pair counts where they
  // stand, enqueues it (buffers at in / out, scratch_) and advances the counts.
  Status runLowered(const algo::Schedule& s, const Call& op, const void* in, void* out,
                    void* stream);
  // Points *in / *out where device work reaches op's buffers: device copies of host
  // buffers, copied in on `stream`. Returns the bytes to copy back from *out to op.recv
  // at the end of the call (0: none).
  Expected<size_t> placeBuffers(const Call& op, char** in, char** out, void* stream);
  Status sendReceive(PointToPointPlan* plan, void* stream);
  Status pointToPoint(const std::vector<PointToPointPlan::Remote>& ops, void* stream);
  // Slot j (0, 1) that rank `from` sends to rank `to` through, as this process maps it.
  char* slot(int from, int to, uint64_t j) const {
    return windows_[static_cast<size_t>(from)] + 2 * halfBytes_ +
           (static_cast<size_t>(to) * 2 + j) * slotBytes_;
  }
  // The 8-byte word `index` of the table at byte `at` of the shared page (`page`, or this
  // rank's mapping of it).
  static std::atomic<uint64_t>& word(void* page, size_t at, int index);
  std::atomic<uint64_t>& word(size_t at, int index) const;
  // The send/receive counters in the shared page: rounds rank s posted to rank r, and
  // rounds rank r consumed from rank s.
  std::atomic<uint64_t>& posted(int s, int r) const;
  std::atomic<uint64_t>& consumed(int s, int r) const;
  // A captured call's flag in set `set` (0, 1, 2) from rank `from` to rank `to`, and rank q's
  // progress word (exec/cuda/window_program.h, above).
  std::atomic<uint64_t>& graphFlag(int set, int from, int to) const;
  std::atomic<uint64_t>& progress(int q) const;
  // A graph slot's flags (exec/cuda/device_program.h) and rank `to`'s waiting mark for `from`.
  std::atomic<uint64_t>& full(int from, int to, int j) const;
  std::atomic<uint64_t>& freed(int from, int to, int j) const;
  std::atomic<uint64_t>& waiting(int from, int to) const;
  // Graph slot j (0, 1) that rank `from` sends to rank `to` through.
  char* graphSlot(int from, int to, uint64_t j) const {
    return slot(from, nranks_, 0) + (static_cast<size_t>(to) * 2 + j) * kGraphSlotBytes;
  }
  // Rank `from`'s graph region (graphBytes_), after its graph slots.
  char* graphRegion(int from) const { return graphSlot(from, nranks_, 0); }
  char* device(const std::atomic<uint64_t>& counter) const;
  // Enqueues on `stream` a wait until the word at `word` (device address) reaches `value`
  // as a wrapping counter: a stream memory wait, or the wait kernel (kernelWaits_).
  Status waitFor(void* stream, char* word, uint64_t value);
  // Ranks on one GPU as threads (above): counter `index` (enqueuedIndex) has had a write
  // of at least `value` enqueued; the next wait for it may be enqueued.
  static constexpr int kEnqueuedWords = 8 + 2 * 8 * 8;
  void enqueued(int index, uint64_t value);
  // Blocks until rank `writer` has enqueued a write of at least `value` to counter `index`
  // (ok), or the barriers are released, the communicator aborts or fails, or the timeout
  // passes.
  Status awaitEnqueued(int index, uint64_t value, int writer);
  // The barrier counter of rank q, or the pair counter (posted: true) of (s, r).
  int enqueuedIndex(int q) const { return q; }
  int enqueuedIndex(bool posted, int s, int r) const {
    return 8 + (posted ? 0 : 64) + s * nranks_ + r;
  }
  Status order(void* stream);
  Status finishCall(void* stream);
  // Enqueues a device program (exec/cuda/device_program.h: a window call's or a lowered
  // schedule's) for op on `stream`, its buffers at in / out, its scratch at `scratch`.
  Status enqueue(const std::vector<DeviceOp>& program, const Call& op, const void* in,
                 void* out, void* scratch, void* stream);
  // *p (of *have bytes) at least `bytes` long: it only grows, the old buffer kept until
  // the windows go (retired_).
  Status growDevice(void** p, size_t* have, size_t bytes);
  Status growScratch(size_t bytes);
  void watch();
  void release(const Status& why);
  // Stores kReleased over every counter and pair count of the shared page.
  void releaseCounters();

  Comm* comm_ = nullptr;
  int rank_ = 0;
  int nranks_ = 1;
  size_t halfBytes_ = 0;        // per half of a window
  size_t graphBytes_ = 0;       // the window's graph region (kGraphRegionBytes)
  int64_t twoShotBytes_ = -1;   // BRAID_CUDA_TWO_SHOT_BYTES (-1: unset; device_choice.h)
  bool oneDevice_ = true;       // every rank's window is on the same GPU
  // Collectives enqueued, by executor (windows, lowered) and algorithm.
  std::atomic<uint64_t> ran_[2][algo::kNumAlgorithms] = {};
  std::atomic<uint64_t> ranLoaded_{0};
  bool kernelWaits_ = false;    // BRAID_CUDA_WAITS=kernel: waits are cuda::launchWait
  void* own_ = nullptr;         // this rank's window (null once local_ owns it)
  // Ranks that are all threads of this process: their windows, shared (device_windows_setup.cc).
  struct Local;
  std::shared_ptr<Local> local_;
  // Ranks as threads of one process: local_'s record of enqueued writes, and the signal
  // its waiters sleep on (null: ranks in processes, waits not ordered; else every other
  // rank's writes are ordered); whether another rank shares this rank's GPU.
  std::atomic<uint64_t>* enqueued_ = nullptr;
  ChangeSignal* enqueuedChanged_ = nullptr;
  bool sharesGpu_ = false;
  std::vector<char*> windows_;  // every rank's window as this process maps it
  uint64_t round_ = 0;          // rounds enqueued (their half: round_ % 2)
  WindowPlans plans_;           // window calls lowered before (exec/cuda/window_program.h)
  size_t slotBytes_ = 0;        // per send slot (two per ordered pair of ranks)
  // Send/receive rounds this rank enqueued, per peer (read by the watch thread).
  std::unique_ptr<std::atomic<uint64_t>[]> sent_, received_;

  // The barrier counters (rank q's at counters_[q]), in a page every rank maps.
  std::unique_ptr<Transport> shm_;
  std::unique_ptr<SharedRegion> flags_;
  Counter* counters_ = nullptr;         // as the host sees them
  char* countersDevice_ = nullptr;      // as device work reaches them
  std::atomic<uint64_t> epoch_{0};      // barriers enqueued by this rank
  std::shared_ptr<DeviceOrder> order_;  // the communicator's (runtime/device_calls.h)
  // Device scratch: a window call's output for a receive buffer kernels cannot write, or
  // a lowered schedule's scratch.
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  braidComm* owner_ = nullptr;  // its selector says which schedules run lowered
  void* stage_ = nullptr;       // device copies of a lowered call's host buffers
  size_t stageBytes_ = 0;
  void* scaled_ = nullptr;  // a lowered premul-sum's input, scaled
  size_t scaledBytes_ = 0;
  std::vector<void*> retired_;  // what those grew out of

  // The watch thread (see above).
  std::thread watcher_;
  std::mutex watchMu_;
  std::condition_variable watchCv_;
  bool stopping_ = false;
  std::atomic<bool> released_{false};
  std::atomic<bool> graphs_{false};  // a call was captured: the watch looks at the flags
  bool captured_ = false;            // the call being enqueued is captured (under opMu)
};

}  // namespace braid
