#include "exec/host/shared_windows.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/env.h"
#include "core/futex.h"
#include "core/logging.h"
#include "core/shared_alloc.h"
#include "exec/host/shared_windows_layout.h"
#include "exec/reduce.h"
#include "exec/stream_copy.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

using windows::kHeaderBytes;
using windows::kLineBytes;
constexpr int kBlockSliceUs = 10000;
// Reductions of several inputs run over blocks this big, so the partial
// result stays in L1 while every input is added to it.
constexpr size_t kReduceBlockBytes = 16 << 10;
// Below this a call copies: mapping and the extra end-of-call wait cost more.
// That wait is a cross-core flag when every rank has a core of its own (2
// ranks from braidMemAlloc, all-reduce 8 KiB: 1.05 us read in place against
// 4.9 us copied; all-gather 64 KiB: 2.0 against 4.1 us), a same-core hand-off
// when ranks share cores (4 ranks on 2 cores, 8 KiB: all-to-all 7.1 against
// 4.5 us, broadcast 4.8 against 3.6 us).
constexpr size_t kZeroCopyMinBytes = 4 << 10;
constexpr size_t kZeroCopyMinBytesSharingCores = 64 << 10;
// Peers' allocations kept mapped; more are unmapped between calls.
constexpr size_t kMaxLent = 64;
// Two-shot all-reduces of 2 ranks up to this size run one-shot when both
// inputs are read in place (see allReduce).
constexpr size_t kLentOneShotMaxBytes = 4 << 20;
// Outputs from this size up are written with streaming stores: they outgrow the
// caches anyway, and a plain store would first read every line from memory.
constexpr size_t kStreamOutMinBytes = 4 << 20;
// A premul-sum input this big and up is scaled on its way into the window (takesScale);
// below it, a scaled copy made first stays in cache for this rank's own reads, which
// wins. Measured on this VM (all_reduce_perf / reduce_scatter_perf -o mulsum, float):
// scaling on the way in took 45 against 29 us (reduce-scatter, 2 ranks, 256 KiB), 268
// against 238 us (all-reduce, 2 ranks, 1 MiB), about the same at 4 MiB, and at 16 MiB
// 4.8 against 5.5 ms (all-reduce, 2 ranks), 10.0 against 12.8 ms (4 ranks), 6.8
// against 8.4-9.4 ms (reduce-scatter, 4 ranks).
constexpr size_t kScaleInWindowMinBytes = 4 << 20;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Pieces of `count` elements split over `parts` ranks, each a multiple of 64
// bytes (except the last), so no two ranks write one cache line.
size_t pieceElems(size_t count, int parts, size_t es) {
  const size_t line = std::max<size_t>(1, 64 / es);
  size_t p = (count + parts - 1) / parts;
  return (p + line - 1) / line * line;
}

}  // namespace

NodeWindows::NodeWindows(Comm& comm, HostExecutor& fifo) : comm_(comm), fifo_(fifo) {
  static_assert(sizeof(Header) <= kHeaderBytes);
  const int64_t chunk = envInt("BRAID_SHM_WINDOW_BYTES", 1 << 20);
  enabled_ = chunk > 0;
  chunk_ = static_cast<size_t>(std::max<int64_t>(chunk, 4096) + 4095) & ~size_t{4095};
  regionBytes_ = kHeaderBytes + 4 * chunk_;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  zeroCopyMin_ =
      cores > 0 && comm.machineRanks() > cores ? kZeroCopyMinBytesSharingCores : kZeroCopyMinBytes;
}

NodeWindows::~NodeWindows() = default;

bool NodeWindows::handles(Collective c, Algorithm a) const {
  if (!enabled_ || state_ == State::kOff || comm_.nranks() < 2 || comm_.nodes() != 1) {
    return false;
  }
  switch (c) {
    case Collective::kAllReduce:
      return a == Algorithm::kDirect || a == Algorithm::kTwoShot;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kBroadcast:
      return a == Algorithm::kDirect;
    case Collective::kAllToAll:
      return a == Algorithm::kPairwise;
    default:
      return false;
  }
}

NodeWindows::Header* NodeWindows::header(int rank) const {
  return reinterpret_cast<Header*>(bases_[rank]);
}

char* NodeWindows::inputArea(int rank, int half) const {
  return bases_[rank] + kHeaderBytes + static_cast<size_t>(half) * 2 * chunk_;
}

char* NodeWindows::outputArea(int rank, int half) const { return inputArea(rank, half) + chunk_; }

namespace {
template <typename H>
std::atomic<uint64_t>& flagOf(H* h, int flag) {
  return flag == 0 ? h->ready : flag == 1 ? h->done : h->finished;
}
const char* flagText(int flag) {
  return flag == 0 ? "data" : flag == 1 ? "reduced piece" : "end of reading";
}
}  // namespace

void NodeWindows::publish(Flag flag, uint64_t epoch) {
  Header* h = header(comm_.rank());
  // A full fence: copies may have used non-temporal stores, which a release
  // store alone does not order.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  flagOf(h, static_cast<int>(flag)).store(epoch, std::memory_order_release);
  wakeSleepers(h);
}

Status NodeWindows::stalled(int peer, Flag flag, uint64_t epoch, const OpDesc& desc,
                            const char* why) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  std::string lag = comm_.describeLag(peer, desc.seq, desc.describe());
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  return timeoutError(desc.describe() + ": " + why + " waiting for " + comm_.describePeer(peer) +
                      " to publish its " + flagText(static_cast<int>(flag)) + " (round " +
                      std::to_string(epoch) + ") in its shared window" +
                      (lag.empty() ? "" : "; " + lag) +
                      " (BRAID_TIMEOUT_MS=" + std::to_string(comm_.config().timeoutMs) + ")");
}

Status NodeWindows::waitFor(int peer, Flag which, uint64_t epoch, const OpDesc& desc) {
  Header* h = header(peer);
  return waitOn(peer, flagOf(h, static_cast<int>(which)), which, epoch, desc);
}

Status NodeWindows::waitOn(int peer, std::atomic<uint64_t>& flag, Flag which, uint64_t epoch,
                           const OpDesc& desc) {
  if (flag.load(std::memory_order_acquire) >= epoch) return Status::ok();
  Header* h = header(peer);
  const uint64_t spinUs = static_cast<uint64_t>(fifo_.spinBudgetUs());
  const uint64_t yieldUs = static_cast<uint64_t>(fifo_.yieldUs());
  uint64_t start = 0;  // the clock is read only once the wait is not short
  uint32_t polls = 0;
  for (;;) {
    if (flag.load(std::memory_order_acquire) >= epoch) {
      if (start != 0) fifo_.adaptSpin((nowNs() - start) / 1000);
      return Status::ok();
    }
    if (spinUs > 0 && (++polls & 63) != 0) {
      cpuRelax();
      continue;
    }
    if (comm_.failed()) return stalled(peer, which, epoch, desc, "failed");
    const uint64_t now = nowNs();
    if (start == 0) start = now;
    const uint64_t waitedUs = (now - start) / 1000;
    if (waitedUs < spinUs) {
      cpuRelax();
    } else if (waitedUs < spinUs + yieldUs) {
      sched_yield();
    } else {
      if (!deadlineSet_) {  // the deadline starts with the first wait that sleeps
        deadline_ = comm_.deadline();
        deadlineSet_ = true;
      }
      if (deadline_.expired()) return stalled(peer, which, epoch, desc, "timed out");
      h->sleepers.fetch_add(1, std::memory_order_seq_cst);
      uint32_t seq = h->wakeSeq.load(std::memory_order_acquire);
      if (flag.load(std::memory_order_seq_cst) < epoch) futexWait(&h->wakeSeq, seq, kBlockSliceUs);
      h->sleepers.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

Status NodeWindows::waitAll(Flag flag, uint64_t epoch, const OpDesc& desc) {
  const int n = comm_.nranks();
  for (int i = 1; i < n; ++i) BRAID_TRY(waitFor((comm_.rank() + i) % n, flag, epoch, desc));
  return Status::ok();
}

NodeWindows::Zero NodeWindows::zeroCopy(const void* p, size_t bytes) const {
  Zero z;
  if (bytes < zeroCopyMin_ || SharedAllocations::instance().empty()) return z;
  SharedSpan span;
  if (!SharedAllocations::instance().find(p, bytes, &span) ||
      span.name.size() >= windows::kNameBytes) {
    return z;
  }
  z.on = true;
  z.name = std::move(span.name);
  z.regionBytes = span.regionBytes;
  z.offset = span.offset;
  return z;
}

void NodeWindows::describe(bool output, int half, const Zero& zero, size_t at) {
  ShareDesc& d = (output ? header(comm_.rank())->output : header(comm_.rank())->input)[half];
  if (!zero.on) {
    // Written only when it changes: peers read this line every round, and a
    // store would take it away from their caches.
    if (d.name[0] != '\0') d.name[0] = '\0';
    return;
  }
  std::memcpy(d.name, zero.name.c_str(), zero.name.size() + 1);
  d.regionBytes = zero.regionBytes;
  d.offset = zero.offset + at;
}

Expected<const char*> NodeWindows::dataOf(int q, bool output, int half, const OpDesc& desc) {
  char* area = output ? outputArea(q, half) : inputArea(q, half);
  if (q == comm_.rank()) return area;  // this rank reads its own data from its window or buffer
  const ShareDesc& d = (output ? header(q)->output : header(q)->input)[half];
  if (d.name[0] == '\0') return area;
  const std::string name(d.name, strnlen(d.name, sizeof(d.name)));
  auto it = lent_.find(name);
  if (it == lent_.end()) {
    Expected<std::unique_ptr<SharedRegion>> r =
        comm_.transportOf(q)->openRegion(name, d.regionBytes);
    if (!r.isOk()) {
      return r.status().withContext(desc.describe() + ": mapping " + comm_.describePeer(q) +
                                    "'s buffer from braidMemAlloc: ");
    }
    it = lent_.emplace(name, std::move(r).value()).first;
  }
  if (d.offset > it->second->bytes()) return remoteError("a peer described a buffer out of range");
  return static_cast<const char*>(it->second->base()) + d.offset;
}

bool NodeWindows::inputsAllLent(int half) const {
  for (int q = 0; q < comm_.nranks(); ++q) {
    if (header(q)->input[half].name[0] == '\0') return false;
  }
  return true;
}

Expected<uint64_t> NodeWindows::beginRound(bool writes, const OpDesc& desc) {
  const uint64_t e = ++epoch_;
  if (writes && allReady_ + 1 < e) {
    BRAID_TRY(waitAll(Flag::kReady, e - 1, desc));
    allReady_ = e - 1;
  }
  return e;
}

void NodeWindows::reduceAll(char* dst, char* shared, const std::vector<const char*>& data,
                            size_t count, const OpDesc& desc) {
  const ReduceKernels& k = reduceKernels(desc.datatype, desc.op);
  const size_t es = datatypeSize(desc.datatype);
  const int n = comm_.nranks();
  const size_t block = std::max<size_t>(1, kReduceBlockBytes / es);
  const bool stream = count * es >= kStreamMinBytes;
  for (size_t b = 0; b < count; b += block) {
    const size_t m = std::min(block, count - b);
    const size_t at = b * es;
    // A large output is made in L1 and streamed out (see streamOut_).
    char* d = streamOut_ ? block_ : dst + at;
    if (n == 2) {
      k.reduceFinal(d, nullptr, data[0] + at, data[1] + at, m, n);
    } else {
      k.reduce(d, data[0] + at, data[1] + at, m);
      for (int r = 2; r < n - 1; ++r) k.reduce(d, d, data[r] + at, m);
      k.reduceFinal(d, nullptr, d, data[n - 1] + at, m, n);
    }
    if (streamOut_) streamLines(dst + at, d, m * es);
    // From L1 into the window: peers read it, so stream it (exec/stream_copy.h).
    if (shared == nullptr) continue;
    if (stream) {
      streamLines(shared + at, d, m * es);
    } else {
      std::memcpy(shared + at, d, m * es);
    }
  }
}

void NodeWindows::copyOut(char* dst, const char* src, size_t bytes) const {
  if (streamOut_) {
    streamCopy(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

void NodeWindows::copyIn(char* dst, const char* src, size_t bytes, const OpDesc& desc) {
  if (scale_ == nullptr) {
    streamCopy(dst, src, bytes);
    return;
  }
  const ScaleFn scale = reduceKernels(desc.datatype, braidSum).scale;
  const size_t es = datatypeSize(desc.datatype);
  if (bytes < kStreamMinBytes) {
    scale(dst, src, bytes / es, scale_);
    return;
  }
  // Scaled in L1, then streamed into the window, which peers read next.
  const size_t block = sizeof(block_) / es * es;
  for (size_t at = 0; at < bytes; at += block) {
    const size_t m = std::min(block, bytes - at);
    scale(block_, src + at, m / es, scale_);
    streamLines(dst + at, block_, m);
  }
}

Expected<bool> NodeWindows::takesScale(const algo::CollArgs& args, Algorithm a,
                                       const OpDesc& desc) {
  const bool reduces =
      args.collective == Collective::kAllReduce || args.collective == Collective::kReduceScatter;
  const size_t inputBytes = args.count * args.elemSize *
                            (args.collective == Collective::kReduceScatter ? comm_.nranks() : 1);
  if (!reduces || !handles(args.collective, a) || inputBytes < kScaleInWindowMinBytes) {
    return false;
  }
  if (state_ == State::kUnset) BRAID_TRY(setup(desc));
  return state_ == State::kOn;
}

Status NodeWindows::runHere(const algo::CollArgs& args, Algorithm a, const ExecBuffers& b,
                            const OpDesc& desc) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  deadlineSet_ = false;
  if (lent_.size() > kMaxLent) lent_.clear();
  data_.resize(comm_.nranks());
  const bool gathers =
      args.collective == Collective::kAllGather || args.collective == Collective::kAllToAll;
  streamOut_ = args.count * args.elemSize * (gathers ? comm_.nranks() : 1) >= kStreamOutMinBytes;
  scale_ = b.scale;
  switch (args.collective) {
    case Collective::kAllReduce:
      return allReduce(args, a == Algorithm::kTwoShot, b, desc);
    case Collective::kAllGather:
      return allGather(args, b, desc);
    case Collective::kReduceScatter:
      return reduceScatter(args, b, desc);
    case Collective::kBroadcast:
      return broadcast(args, b, desc);
    case Collective::kAllToAll:
      return allToAll(args, b, desc);
    default:
      return internalError("shared windows cannot run " + std::string(desc.collective));
  }
}

Status NodeWindows::allReduce(const algo::CollArgs& args, bool twoShot, const ExecBuffers& b,
                              const OpDesc& desc) {
  const size_t es = args.elemSize;
  if (args.count * es <= kLineBytes && args.count > 0) return allReduceSmall(args, b, desc);
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  // In place, this rank's result would overwrite what peers are reading.
  const Zero zin = args.inPlace || scale_ != nullptr ? Zero() : zeroCopy(in, args.count * es);
  const Zero zout = twoShot && zin.on ? zeroCopy(out, args.count * es) : Zero();
  // Two ranks whose inputs are both read in place: one-shot reads as many
  // bytes across the cores as two-shot (each rank the other's n bytes), with
  // one hand-off fewer and no output lines pulled from the peer's cache.
  // Measured at 2 ranks from braidMemAlloc, one-shot against two-shot: 64 KiB
  // 2.6 against 5.3-19.5 us, 1 MiB 36-42 against 47-49 us, 4 MiB 247-270
  // against 275-281 us; from 16 MiB each rank's reads come from memory and
  // two-shot reads half as many. Every rank sees every descriptor once the
  // ready flags are up, so all decide alike.
  const bool lentOneShot = twoShot && zin.on && n == 2 && args.count * es <= kLentOneShotMaxBytes;
  const size_t perRound = chunk_ / es;
  uint64_t e = epoch_;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(e, beginRound(true, desc));
    const int half = static_cast<int>(e & 1);
    describe(false, half, zin, off * es);
    const size_t piece = pieceElems(m, n, es);
    if (!zin.on) {
      // Two-shot: peers read only their own pieces of this input, and out of
      // place this rank reads its piece from its input (in place, its result
      // overwrites that piece while it is being read; n > 2 reads it late).
      if (twoShot && !args.inPlace && scale_ == nullptr) {
        for (int q = 0; q < n; ++q) {
          const size_t qlo = std::min(m, piece * q);
          const size_t qhi = std::min(m, qlo + piece);
          if (q != me && qhi > qlo) {
            streamCopy(inputArea(me, half) + qlo * es, in + (off + qlo) * es, (qhi - qlo) * es);
          }
        }
      } else {
        copyIn(inputArea(me, half), in + off * es, m * es, desc);
      }
    }
    publish(Flag::kReady, e);
    BRAID_TRY(waitAll(Flag::kReady, e, desc));
    allReady_ = e;
    for (int q = 0; q < n; ++q) {
      BRAID_ASSIGN_OR_RETURN(data_[q], dataOf(q, false, half, desc));
    }
    // This rank's own input where it lies, not the streamed (uncached) copy; a scaled
    // input only in its window.
    if ((zin.on || !args.inPlace) && scale_ == nullptr) data_[me] = in + off * es;
    if (!twoShot || (lentOneShot && inputsAllLent(half))) {
      reduceAll(out + off * es, nullptr, data_, m, desc);
      publish(Flag::kFinished, e);
      continue;
    }
    const size_t lo = std::min(m, piece * me);
    const size_t hi = std::min(m, lo + piece);
    for (int q = 0; q < n; ++q) data_[q] += lo * es;
    // This rank's piece: into its output (peers copy it from there when the
    // output is shared) or into its window's output area and the output.
    describe(true, half, zout, off * es);
    if (hi > lo) {
      if (zout.on) {
        reduceAll(out + (off + lo) * es, nullptr, data_, hi - lo, desc);
      } else {
        reduceAll(out + (off + lo) * es, outputArea(me, half) + lo * es, data_, hi - lo, desc);
      }
    }
    publish(Flag::kDone, e);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      const size_t qlo = std::min(m, piece * q);
      const size_t qhi = std::min(m, qlo + piece);
      if (qhi == qlo) continue;
      BRAID_TRY(waitFor(q, Flag::kDone, e, desc));
      BRAID_ASSIGN_OR_RETURN(const char* piece_q, dataOf(q, true, half, desc));
      copyOut(out + (off + qlo) * es, piece_q + qlo * es, (qhi - qlo) * es);
    }
    publish(Flag::kFinished, e);
  }
  if (zin.on) BRAID_TRY(waitAll(Flag::kFinished, e, desc));
  return Status::ok();
}

Status NodeWindows::allGather(const algo::CollArgs& args, const ExecBuffers& b,
                              const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  // In place too: peers read this rank's block, and it writes only theirs.
  const Zero zin = zeroCopy(in, args.count * es);
  const size_t perRound = chunk_ / es;
  uint64_t e = epoch_;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(e, beginRound(true, desc));
    const int half = static_cast<int>(e & 1);
    describe(false, half, zin, off * es);
    if (!zin.on) streamCopy(inputArea(me, half), in + off * es, m * es);
    publish(Flag::kReady, e);
    if (!args.inPlace) copyOut(out + (me * args.count + off) * es, in + off * es, m * es);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      BRAID_TRY(waitFor(q, Flag::kReady, e, desc));
      BRAID_ASSIGN_OR_RETURN(const char* src, dataOf(q, false, half, desc));
      copyOut(out + (q * args.count + off) * es, src, m * es);
    }
    allReady_ = e;
    publish(Flag::kFinished, e);
  }
  if (zin.on) BRAID_TRY(waitAll(Flag::kFinished, e, desc));
  return Status::ok();
}

Expected<uint64_t> NodeWindows::publishBlocks(const algo::CollArgs& args, const char* in,
                                              const Zero& zin, size_t off, size_t m, size_t slot,
                                              const OpDesc& desc) {
  const size_t es = args.elemSize;
  BRAID_ASSIGN_OR_RETURN(uint64_t e, beginRound(true, desc));
  const int half = static_cast<int>(e & 1);
  describe(false, half, zin, 0);
  for (int j = 0; j < comm_.nranks() && !zin.on; ++j) {
    // Out of place, this rank reads its own block from its input (unless it scales).
    if (j == comm_.rank() && !args.inPlace && scale_ == nullptr) continue;
    copyIn(inputArea(comm_.rank(), half) + j * slot, in + (j * args.count + off) * es, m * es,
           desc);
  }
  publish(Flag::kReady, e);
  return e;
}

Expected<const char*> NodeWindows::blockOf(int q, int half, size_t lentAt, size_t slotAt,
                                           const OpDesc& desc) {
  if (q == comm_.rank() || header(q)->input[half].name[0] == '\0') {
    return static_cast<const char*>(inputArea(q, half) + slotAt);
  }
  BRAID_ASSIGN_OR_RETURN(const char* lent, dataOf(q, false, half, desc));
  return lent + lentAt;
}

Status NodeWindows::reduceScatter(const algo::CollArgs& args, const ExecBuffers& b,
                                  const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  // Out of place, an input from braidMemAlloc is read where it lies (unless it scales).
  const Zero zin = args.inPlace || scale_ != nullptr ? Zero() : zeroCopy(in, n * args.count * es);
  // Each round moves a piece of every block; pieces sit a cache line apart.
  const size_t slot = chunk_ / n / 64 * 64;
  const size_t perRound = slot / es;
  uint64_t e = epoch_;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(e, publishBlocks(args, in, zin, off, m, slot, desc));
    const int half = static_cast<int>(e & 1);
    BRAID_TRY(waitAll(Flag::kReady, e, desc));
    allReady_ = e;
    for (int q = 0; q < n; ++q) {
      BRAID_ASSIGN_OR_RETURN(data_[q],
                             blockOf(q, half, (me * args.count + off) * es, me * slot, desc));
    }
    if (!args.inPlace && scale_ == nullptr) data_[me] = in + (me * args.count + off) * es;
    reduceAll(out + off * es, nullptr, data_, m, desc);
    publish(Flag::kFinished, e);
  }
  // Peers read the lent input until they finish: it stays untouched until then.
  if (zin.on) BRAID_TRY(waitAll(Flag::kFinished, e, desc));
  return Status::ok();
}

Status NodeWindows::broadcast(const algo::CollArgs& args, const ExecBuffers& b,
                              const OpDesc& desc) {
  const size_t es = args.elemSize;
  if (args.count * es <= kLineBytes && args.count > 0) return broadcastSmall(args, b, desc);
  const int me = comm_.rank();
  const bool root = me == args.root;
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  const Zero zin = root ? zeroCopy(in, args.count * es) : Zero();
  const size_t perRound = chunk_ / es;
  uint64_t e = epoch_;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(e, beginRound(root, desc));
    const int half = static_cast<int>(e & 1);
    if (root) {
      describe(false, half, zin, off * es);
      if (!zin.on) streamCopy(inputArea(me, half), in + off * es, m * es);
      publish(Flag::kReady, e);
      // The root's own copy while peers copy this round, not before they can start.
      if (!args.inPlace) copyOut(out + off * es, in + off * es, m * es);
      continue;
    }
    publish(Flag::kReady, e);  // this rank has finished the rounds before e
    BRAID_TRY(waitFor(args.root, Flag::kReady, e, desc));
    BRAID_ASSIGN_OR_RETURN(const char* src, dataOf(args.root, false, half, desc));
    copyOut(out + off * es, src, m * es);
    publish(Flag::kFinished, e);
  }
  if (zin.on) BRAID_TRY(waitAll(Flag::kFinished, e, desc));
  return Status::ok();
}

Status NodeWindows::allToAll(const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  // Out of place, an input from braidMemAlloc is read where it lies: one copy
  // per block instead of two. (In place, this rank's output would overwrite
  // blocks peers are reading.)
  const Zero zin = args.inPlace ? Zero() : zeroCopy(in, n * args.count * es);
  const size_t slot = chunk_ / n / 64 * 64;
  const size_t perRound = slot / es;
  uint64_t e = epoch_;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(e, publishBlocks(args, in, zin, off, m, slot, desc));
    const int half = static_cast<int>(e & 1);
    // Own block last: in place, the output overwrites this rank's input,
    // which only this rank reads (peers read the window copy).
    for (int i = 1; i <= n; ++i) {
      const int q = (me + i) % n;
      if (q != me) BRAID_TRY(waitFor(q, Flag::kReady, e, desc));
      const char* src = nullptr;
      if (q == me && !args.inPlace) {
        src = in + (me * args.count + off) * es;
      } else {
        BRAID_ASSIGN_OR_RETURN(src,
                               blockOf(q, half, (me * args.count + off) * es, me * slot, desc));
      }
      copyOut(out + (q * args.count + off) * es, src, m * es);
    }
    allReady_ = e;
    publish(Flag::kFinished, e);
  }
  if (zin.on) BRAID_TRY(waitAll(Flag::kFinished, e, desc));
  return Status::ok();
}

}  // namespace braid
