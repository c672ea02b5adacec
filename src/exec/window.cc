#include "exec/window.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/env.h"
#include "core/futex.h"
#include "core/logging.h"
#include "exec/reduce.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

constexpr uint32_t kWindowMagic = 0x42574e44;  // "BWND"
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kNameBytes = 64;
constexpr int kBlockSliceUs = 10000;
// Reductions of several inputs run over blocks this big, so the partial
// result stays in L1 while every input is added to it.
constexpr size_t kReduceBlockBytes = 16 << 10;

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

struct NodeWindows::Header {
  uint32_t magic;
  int32_t rank;
  uint64_t chunkBytes;
  alignas(64) std::atomic<uint64_t> ready;
  alignas(64) std::atomic<uint64_t> done;
  alignas(64) std::atomic<uint32_t> wakeSeq;
  std::atomic<uint32_t> sleepers;
};


NodeWindows::NodeWindows(Comm& comm, HostExecutor& fifo) : comm_(comm), fifo_(fifo) {
  static_assert(sizeof(Header) <= kHeaderBytes);
  const int64_t chunk = envInt("BRAID_SHM_WINDOW_BYTES", 1 << 20);
  enabled_ = chunk > 0;
  chunk_ = static_cast<size_t>(std::max<int64_t>(chunk, 4096) + 4095) & ~size_t{4095};
  regionBytes_ = kHeaderBytes + 4 * chunk_;
}

NodeWindows::~NodeWindows() = default;

bool NodeWindows::handles(Collective c, Algorithm a) const {
  if (!enabled_ || state_ == State::kOff || comm_.nranks() < 2 || comm_.nodes() != 1) {
    return false;
  }
  switch (c) {
    case Collective::kAllReduce: return a == Algorithm::kDirect || a == Algorithm::kTwoShot;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kBroadcast: return a == Algorithm::kDirect;
    case Collective::kAllToAll: return a == Algorithm::kPairwise;
    default: return false;
  }
}

NodeWindows::Header* NodeWindows::header(int rank) const {
  return reinterpret_cast<Header*>(bases_[rank]);
}

char* NodeWindows::inputArea(int rank, int half) const {
  return bases_[rank] + kHeaderBytes + static_cast<size_t>(half) * 2 * chunk_;
}

char* NodeWindows::outputArea(int rank, int half) const {
  return inputArea(rank, half) + chunk_;
}

// Every rank makes its region and all-gathers the names (an empty name: this
// rank could not); then maps the peers' and all-gathers whether that worked.
// Only when every rank succeeded are the windows on, so all ranks agree.
Status NodeWindows::setup(const OpDesc& desc) {
  const int n = comm_.nranks();
  const int me = comm_.rank();
  std::vector<int> all;
  for (int p = 0; p < n; ++p) {
    if (p != me) all.push_back(p);
  }
  Deadline deadline = comm_.deadline();
  BRAID_TRY(comm_.connectPeers(all, deadline).withContext(desc.describe() + ": "));
  Transport* shm = nullptr;
  bool usable = true;
  for (int p : all) {
    Transport* t = comm_.transportOf(p);
    if (shm == nullptr) shm = t;
    usable = usable && t == shm;
  }
  std::string why;
  if (usable) {
    Expected<std::unique_ptr<SharedRegion>> r = shm->createRegion(regionBytes_);
    if (r.isOk()) {
      mine_ = std::move(r).value();
    } else {
      why = r.status().message();
    }
  } else {
    why = "peers connect over different transports";
  }
  // Round 1: names.
  auto exchange = [&](const void* mine, void* every, size_t bytes) {
    algo::CollArgs a;
    a.collective = Collective::kAllGather;
    a.rank = me;
    a.nranks = n;
    a.count = bytes;
    a.elemSize = 1;
    a.maxStepElems = std::max<uint64_t>(1, comm_.config().sliceBytes * (comm_.config().slots / 2));
    algo::Schedule s = algo::buildSchedule(Algorithm::kRing, a);
    OpDesc d = desc;
    d.algorithm = "window setup";
    d.bytes = bytes;
    d.datatype = braidUint8;
    return fifo_.run(s, ExecBuffers{mine, every}, d);
  };
  char name[kNameBytes] = {};
  if (mine_ != nullptr && mine_->name().size() < kNameBytes) {
    std::memcpy(name, mine_->name().data(), mine_->name().size());
  }
  std::vector<char> names(kNameBytes * n);
  BRAID_TRY(exchange(name, names.data(), kNameBytes));
  bool ok = mine_ != nullptr;
  peers_.resize(n);
  bases_.assign(n, nullptr);
  for (int p = 0; p < n && ok; ++p) {
    if (p == me) continue;
    std::string theirs(&names[kNameBytes * p], strnlen(&names[kNameBytes * p], kNameBytes));
    if (theirs.empty() || theirs.size() == kNameBytes) {
      ok = false;
      why = "rank " + std::to_string(p) + " has no window";
      break;
    }
    Expected<std::unique_ptr<SharedRegion>> r = shm->openRegion(theirs, regionBytes_);
    if (!r.isOk()) {
      ok = false;
      why = r.status().message();
      break;
    }
    peers_[p] = std::move(r).value();
    bases_[p] = static_cast<char*>(peers_[p]->base());
  }
  if (ok) {
    bases_[me] = static_cast<char*>(mine_->base());
    Header* h = new (bases_[me]) Header();
    h->magic = kWindowMagic;
    h->rank = me;
    h->chunkBytes = chunk_;
  }
  // Round 2: did every rank map every region? (Also: every name is mapped
  // once this returns, so the creators unlink.)
  char mineOk = ok ? 1 : 0;
  std::vector<char> oks(n);
  BRAID_TRY(exchange(&mineOk, oks.data(), 1));
  if (mine_ != nullptr) mine_->unlinkName();
  for (int p = 0; p < n; ++p) {
    if (oks[p] == 1) continue;
    ok = false;
    if (why.empty()) why = "rank " + std::to_string(p) + " could not map the windows";
  }
  if (!ok) {
    BRAID_INFO("rank %d: shared windows are off, direct algorithms use FIFOs: %s", me,
               why.c_str());
    peers_.clear();
    bases_.clear();
    mine_.reset();
    state_ = State::kOff;
    return Status::ok();
  }
  state_ = State::kOn;
  BRAID_INFO("rank %d: shared windows on (%zu B per round per rank)", me, chunk_);
  return Status::ok();
}

void NodeWindows::publish(bool done, uint64_t epoch) {
  Header* h = header(comm_.rank());
  // A full fence: copies may have used non-temporal stores, which a release
  // store alone does not order.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  (done ? h->done : h->ready).store(epoch, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h->sleepers.load(std::memory_order_relaxed) != 0) {
    h->wakeSeq.fetch_add(1, std::memory_order_release);
    futexWakeAll(&h->wakeSeq);
  }
}

Status NodeWindows::stalled(int peer, bool done, uint64_t epoch, const OpDesc& desc,
                            const char* why) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  std::string lag = comm_.describeLag(peer, desc.seq, desc.describe());
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  return timeoutError(desc.describe() + ": " + why + " waiting for " + comm_.describePeer(peer) +
                      " to publish its " + (done ? "reduced piece" : "data") + " (round " +
                      std::to_string(epoch) + ") in its shared window" +
                      (lag.empty() ? "" : "; " + lag) +
                      " (BRAID_TIMEOUT_MS=" + std::to_string(comm_.config().timeoutMs) + ")");
}

Status NodeWindows::waitFor(int peer, bool done, uint64_t epoch, const OpDesc& desc) {
  Header* h = header(peer);
  std::atomic<uint64_t>& flag = done ? h->done : h->ready;
  if (flag.load(std::memory_order_acquire) >= epoch) return Status::ok();
  const uint64_t start = nowNs();
  const uint64_t spinUs = static_cast<uint64_t>(fifo_.spinBudgetUs());
  const uint64_t yieldUs = static_cast<uint64_t>(fifo_.yieldUs());
  uint32_t polls = 0;
  for (;;) {
    if (flag.load(std::memory_order_acquire) >= epoch) {
      if (polls >= 64) fifo_.adaptSpin((nowNs() - start) / 1000);
      return Status::ok();
    }
    if (spinUs > 0 && (++polls & 63) != 0) {
      cpuRelax();
      continue;
    }
    polls |= 64;
    if (comm_.failed()) return stalled(peer, done, epoch, desc, "failed");
    const uint64_t waitedUs = (nowNs() - start) / 1000;
    if (waitedUs < spinUs) {
      cpuRelax();
    } else if (waitedUs < spinUs + yieldUs) {
      sched_yield();
    } else {
      if (deadline_.expired()) return stalled(peer, done, epoch, desc, "timed out");
      h->sleepers.fetch_add(1, std::memory_order_seq_cst);
      uint32_t seq = h->wakeSeq.load(std::memory_order_acquire);
      if (flag.load(std::memory_order_seq_cst) < epoch) futexWait(&h->wakeSeq, seq, kBlockSliceUs);
      h->sleepers.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

Status NodeWindows::waitAll(bool done, uint64_t epoch, const OpDesc& desc) {
  const int n = comm_.nranks();
  for (int i = 1; i < n; ++i) BRAID_TRY(waitFor((comm_.rank() + i) % n, done, epoch, desc));
  return Status::ok();
}

Expected<uint64_t> NodeWindows::beginRound(bool writes, const OpDesc& desc) {
  const uint64_t e = ++epoch_;
  if (writes && allReady_ + 1 < e) {
    BRAID_TRY(waitAll(false, e - 1, desc));
    allReady_ = e - 1;
  }
  return e;
}

void NodeWindows::reduceAll(char* dst, char* dst1, size_t offsetBytes, size_t count, int half,
                            const OpDesc& desc) const {
  const ReduceKernels& k = reduceKernels(desc.datatype, desc.op);
  const size_t es = datatypeSize(desc.datatype);
  const int n = comm_.nranks();
  const size_t block = std::max<size_t>(1, kReduceBlockBytes / es);
  for (size_t b = 0; b < count; b += block) {
    const size_t m = std::min(block, count - b);
    const size_t at = offsetBytes + b * es;
    char* d = dst + b * es;
    char* d1 = dst1 != nullptr ? dst1 + b * es : nullptr;
    if (n == 2) {
      k.reduceFinal(d, d1, inputArea(0, half) + at, inputArea(1, half) + at, m, n);
      continue;
    }
    k.reduce(d, inputArea(0, half) + at, inputArea(1, half) + at, m);
    for (int r = 2; r < n - 1; ++r) k.reduce(d, d, inputArea(r, half) + at, m);
    k.reduceFinal(d, d1, d, inputArea(n - 1, half) + at, m, n);
  }
}

Status NodeWindows::runHere(const algo::CollArgs& args, Algorithm a, const ExecBuffers& b,
                            const OpDesc& desc) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  deadline_ = comm_.deadline();
  switch (args.collective) {
    case Collective::kAllReduce: return allReduce(args, a == Algorithm::kTwoShot, b, desc);
    case Collective::kAllGather: return allGather(args, b, desc);
    case Collective::kReduceScatter: return reduceScatter(args, b, desc);
    case Collective::kBroadcast: return broadcast(args, b, desc);
    case Collective::kAllToAll: return allToAll(args, b, desc);
    default: return internalError("shared windows cannot run " + std::string(desc.collective));
  }
}

Status NodeWindows::allReduce(const algo::CollArgs& args, bool twoShot, const ExecBuffers& b,
                              const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  const size_t perRound = chunk_ / es;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(uint64_t e, beginRound(true, desc));
    const int half = static_cast<int>(e & 1);
    std::memcpy(inputArea(me, half), in + off * es, m * es);
    publish(false, e);
    BRAID_TRY(waitAll(false, e, desc));
    allReady_ = e;
    if (!twoShot) {
      reduceAll(out + off * es, nullptr, 0, m, half, desc);
      continue;
    }
    const size_t piece = pieceElems(m, n, es);
    const size_t lo = std::min(m, piece * me);
    const size_t hi = std::min(m, lo + piece);
    if (hi > lo) {
      reduceAll(outputArea(me, half) + lo * es, out + (off + lo) * es, lo * es, hi - lo, half,
                desc);
    }
    publish(true, e);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      const size_t qlo = std::min(m, piece * q);
      const size_t qhi = std::min(m, qlo + piece);
      if (qhi == qlo) continue;
      BRAID_TRY(waitFor(q, true, e, desc));
      std::memcpy(out + (off + qlo) * es, outputArea(q, half) + qlo * es, (qhi - qlo) * es);
    }
  }
  return Status::ok();
}

Status NodeWindows::allGather(const algo::CollArgs& args, const ExecBuffers& b,
                              const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  const size_t perRound = chunk_ / es;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(uint64_t e, beginRound(true, desc));
    const int half = static_cast<int>(e & 1);
    std::memcpy(inputArea(me, half), in + off * es, m * es);
    publish(false, e);
    if (!args.inPlace) std::memcpy(out + (me * args.count + off) * es, in + off * es, m * es);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      BRAID_TRY(waitFor(q, false, e, desc));
      std::memcpy(out + (q * args.count + off) * es, inputArea(q, half), m * es);
    }
    allReady_ = e;
  }
  return Status::ok();
}

Status NodeWindows::reduceScatter(const algo::CollArgs& args, const ExecBuffers& b,
                                  const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  // Each round moves a piece of every block; pieces sit a cache line apart.
  const size_t slot = chunk_ / n / 64 * 64;
  const size_t perRound = slot / es;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(uint64_t e, beginRound(true, desc));
    const int half = static_cast<int>(e & 1);
    for (int j = 0; j < n; ++j) {
      std::memcpy(inputArea(me, half) + j * slot, in + (j * args.count + off) * es, m * es);
    }
    publish(false, e);
    BRAID_TRY(waitAll(false, e, desc));
    allReady_ = e;
    reduceAll(out + off * es, nullptr, me * slot, m, half, desc);
  }
  return Status::ok();
}

Status NodeWindows::broadcast(const algo::CollArgs& args, const ExecBuffers& b,
                              const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int me = comm_.rank();
  const bool root = me == args.root;
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  const size_t perRound = chunk_ / es;
  if (root && !args.inPlace) std::memcpy(out, in, args.count * es);
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(uint64_t e, beginRound(root, desc));
    const int half = static_cast<int>(e & 1);
    if (root) {
      std::memcpy(inputArea(me, half), in + off * es, m * es);
      publish(false, e);
      continue;
    }
    publish(false, e);  // this rank has finished the rounds before e
    BRAID_TRY(waitFor(args.root, false, e, desc));
    std::memcpy(out + off * es, inputArea(args.root, half), m * es);
  }
  return Status::ok();
}

Status NodeWindows::allToAll(const algo::CollArgs& args, const ExecBuffers& b,
                             const OpDesc& desc) {
  const size_t es = args.elemSize;
  const int n = comm_.nranks();
  const int me = comm_.rank();
  const char* in = static_cast<const char*>(b.input);
  char* out = static_cast<char*>(b.output);
  const size_t slot = chunk_ / n / 64 * 64;
  const size_t perRound = slot / es;
  for (size_t off = 0; off < args.count; off += perRound) {
    const size_t m = std::min(perRound, args.count - off);
    BRAID_ASSIGN_OR_RETURN(uint64_t e, beginRound(true, desc));
    const int half = static_cast<int>(e & 1);
    for (int j = 0; j < n; ++j) {
      std::memcpy(inputArea(me, half) + j * slot, in + (j * args.count + off) * es, m * es);
    }
    publish(false, e);
    // Own block last: in place, the output overwrites this rank's input,
    // which only this rank reads (peers read the window copy).
    for (int i = 1; i <= n; ++i) {
      const int q = (me + i) % n;
      if (q != me) BRAID_TRY(waitFor(q, false, e, desc));
      std::memcpy(out + (q * args.count + off) * es, inputArea(q, half) + me * slot, m * es);
    }
    allReady_ = e;
  }
  return Status::ok();
}

}  // namespace braid
