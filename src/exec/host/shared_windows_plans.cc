// NodeWindows' choice of schedules (exec/host/shared_windows.h): which calls run on the
// windows, which window schedule runs them, and the plans that keep recent ones with what
// the interpreter (shared_windows.cc) derives from them.
#include <unistd.h>

#include <algorithm>

#include "core/env.h"
#include "core/shared_alloc.h"
#include "exec/host/shared_windows.h"
#include "exec/host/shared_windows_layout.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::BufRef;
using algo::Collective;
using algo::OpKind;
using algo::Step;
using windows::kHeaderBytes;
using windows::kLineBytes;

// Below this a call copies: mapping and the extra end-of-call wait cost more.
// That wait is a cross-core flag when every rank has a core of its own (2
// ranks from braidMemAlloc, all-reduce 8 KiB: 1.05 us read in place against
// 4.9 us copied; all-gather 64 KiB: 2.0 against 4.1 us), a same-core hand-off
// when ranks share cores (4 ranks on 2 cores, 8 KiB: all-to-all 7.1 against
// 4.5 us, broadcast 4.8 against 3.6 us).
constexpr size_t kZeroCopyMinBytes = 4 << 10;
constexpr size_t kZeroCopyMinBytesSharingCores = 64 << 10;
// Two ranks whose inputs are both read in place: one-shot reads as many bytes across the
// cores as two-shot (each rank the other's n bytes), with one hand-off fewer and no output
// lines pulled from the peer's cache. Measured at 2 ranks from braidMemAlloc, one-shot
// against two-shot: 64 KiB 2.6 against 5.3-19.5 us, 1 MiB 36-42 against 47-49 us, 4 MiB
// 247-270 against 275-281 us; from 16 MiB each rank's reads come from memory and two-shot
// reads half as many.
constexpr size_t kLentOneShotMaxBytes = 4 << 20;
// A premul-sum input this big and up is scaled on its way into the window (takesScale);
// below it, a scaled copy made first stays in cache for this rank's own reads, which
// wins. Measured on this VM (all_reduce_perf / reduce_scatter_perf -o mulsum, float):
// scaling on the way in took 45 against 29 us (reduce-scatter, 2 ranks, 256 KiB), 268
// against 238 us (all-reduce, 2 ranks, 1 MiB), about the same at 4 MiB, and at 16 MiB
// 4.8 against 5.5 ms (all-reduce, 2 ranks), 10.0 against 12.8 ms (4 ranks), 6.8
// against 8.4-9.4 ms (reduce-scatter, 4 ranks).
constexpr size_t kScaleInWindowMinBytes = 4 << 20;

// Elements of a call's input and output (algo::CollArgs: buffers by collective).
uint64_t inputElems(const algo::CollArgs& a) {
  const bool blocks = a.collective == Collective::kReduceScatter ||
                      a.collective == Collective::kAllToAll ||
                      a.collective == Collective::kScatter;
  return a.count * (blocks ? a.nranks : 1);
}
uint64_t outputElems(const algo::CollArgs& a) {
  const bool blocks = a.collective == Collective::kAllGather ||
                      a.collective == Collective::kAllToAll || a.collective == Collective::kGather;
  return a.count * (blocks ? a.nranks : 1);
}

// Whether schedule s is one round whose window data lies in the first kLineBytes of the
// input areas (so in a header line, see the rules in shared_windows.h).
bool fitsLine(const algo::Schedule& s, size_t es) {
  int rounds = 0;
  uint64_t extent = 0;
  for (const Step& st : s.steps) {
    if (st.op == OpKind::kBeginRound && ++rounds > 1) return false;
    const bool reads = st.op == OpKind::kReducePeers || st.op == OpKind::kCopyPeer;
    const BufRef area = st.op == OpKind::kPut ? st.dst : reads ? st.src : BufRef::kNone;
    if (area == BufRef::kWindowOut || (st.op == OpKind::kCopy && st.dst == BufRef::kWindowIn)) {
      return false;
    }
    if (area == BufRef::kWindowIn) {
      extent = std::max(extent, (st.op == OpKind::kPut ? st.dstOffset : st.srcOffset) + st.count);
    }
  }
  return rounds == 1 && extent > 0 && extent * es <= kLineBytes;
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

bool NodeWindows::available() const {
  return enabled_ && state_ != State::kOff && comm_.nranks() >= 2 && comm_.nodes() == 1;
}

Status NodeWindows::windowsOff(const OpDesc& desc) const {
  return invalidUsage(desc.describe() + ": " + desc.algorithm +
                      " is a window program, and this communicator's shared windows could not "
                      "be set up (see the WARN above; BRAID_SHM_WINDOW_BYTES)");
}

bool NodeWindows::handles(Collective c, Algorithm a) const {
  if (!available()) return false;
  switch (c) {
    case Collective::kAllReduce:
      return a == Algorithm::kDirect || a == Algorithm::kTwoShot;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kBroadcast:
    case Collective::kReduce:
      return a == Algorithm::kDirect;
    case Collective::kAllToAll:
      return a == Algorithm::kPairwise;
    default:
      return false;
  }
}

Algorithm NodeWindows::scheduleAlgorithm(const algo::CollArgs& args, Algorithm a) const {
  const bool fitsLine = args.count > 0 && args.count * args.elemSize <= kLineBytes;
  return a == Algorithm::kTwoShot && fitsLine ? Algorithm::kDirect : a;
}

bool NodeWindows::lentOneShotCandidate(const algo::CollArgs& args, Algorithm a,
                                       bool scaled) const {
  const size_t bytes = args.count * args.elemSize;
  return args.collective == Collective::kAllReduce &&
         comm_.nranks() == 2 && bytes <= kLentOneShotMaxBytes && bytes >= zeroCopyMin_ &&
         !args.inPlace && !scaled && !SharedAllocations::instance().empty();
}

NodeWindows::Plan* NodeWindows::findPlan(const algo::CollArgs& args, Algorithm a, bool scaled,
                                         const void* source) {
  for (int i = 0; i < kPlans; ++i) {
    Plan& p = plans_[(lastPlan_ + i) % kPlans];  // the last call's first
    if (p.matches(args, a, scaled, source)) {
      lastPlan_ = static_cast<int>(&p - plans_.data());
      return &p;
    }
  }
  return nullptr;
}

algo::CollArgs NodeWindows::windowArgs(const algo::CollArgs& args, bool scaled) const {
  algo::CollArgs w = args;
  w.windowElems = chunk_ / args.elemSize;
  w.scaledPut = scaled;
  return w;
}

NodeWindows::Plan& NodeWindows::newPlan(const algo::CollArgs& args, Algorithm a, bool scaled,
                                        const void* source) {
  lastPlan_ = nextPlan_;
  Plan* p = &plans_[nextPlan_];
  nextPlan_ = (nextPlan_ + 1) % kPlans;
  p->collective = args.collective;
  p->algorithm = a;
  p->source = source;
  p->count = args.count;
  p->elemSize = args.elemSize;
  p->inPlace = args.inPlace;
  p->root = args.root;
  p->scaled = scaled;
  p->used = true;
  p->hasOneShot = false;
  p->inputBytes = inputElems(args) * args.elemSize;
  p->outputBytes = outputElems(args) * args.elemSize;
  return *p;
}

void NodeWindows::derive(Plan* plan) const {
  // A loaded program's ranks may differ in what they put and read: lines are for
  // built-ins, whose ranks decide alike.
  plan->line = plan->source == nullptr && fitsLine(plan->schedule, plan->elemSize);
  plan->copiesOnly = std::none_of(plan->schedule.steps.begin(), plan->schedule.steps.end(),
                                  [](const algo::Step& s) { return s.op == OpKind::kReducePeers; });
}

Expected<bool> NodeWindows::takesScale(const algo::CollArgs& args, Algorithm a,
                                       const OpDesc& desc) {
  const bool reduces =
      args.collective == Collective::kAllReduce || args.collective == Collective::kReduceScatter;
  if (!reduces || !handles(args.collective, a) ||
      inputElems(args) * args.elemSize < kScaleInWindowMinBytes) {
    return false;
  }
  if (state_ == State::kUnset) BRAID_TRY(setup(desc));
  return state_ == State::kOn;
}

}  // namespace braid
