#include "exec/cuda/window_program.h"

#include <algorithm>
#include <string>

#include "algorithms/direct/direct.h"
#include "algorithms/registry.h"
#include "exec/cuda/window_lowering.h"

namespace braid {
namespace {

using Kind = DeviceOp::Kind;

// Every rank's schedule of `call` with areas of `areaElems`. Every rank is built as this
// one (the buffers' kinds are this rank's): the rounds and flags, all the lowering takes
// from the peers', do not depend on them.
Expected<std::vector<algo::Schedule>> schedulesOf(const WindowCall& call, int nranks,
                                                  uint64_t areaElems, bool ownFromWindow) {
  const algo::Algorithm alg = algo::windowAlgorithm(call.collective, call.twoShot);
  algo::CollArgs args;
  args.collective = call.collective;
  args.nranks = nranks;
  args.count = call.count;
  args.elemSize = static_cast<uint32_t>(call.elemSize);
  args.root = call.root;
  args.windowElems = areaElems;
  // Out of place as far as the device cares: in place, the own copies and own terms of
  // the out-of-place layout read and write the same bytes, element by element.
  args.inPlace = false;
  args.scaledPut = ownFromWindow;
  if (!algo::windowFits(args)) {
    return Status(braidInternalError, "device windows: an area of " + std::to_string(areaElems) +
                                          " elements holds no round");
  }
  std::vector<algo::Schedule> all;
  for (int q = 0; q < nranks; ++q) {
    args.rank = q;
    all.push_back(algo::buildWindowSchedule(alg, args));
  }
  return all;
}

// Rank `rank`'s program with barrier values from 1: kWindowOut in the same bytes as
// kWindowIn where every layout of the call allows it, else in the half's second half.
Expected<WindowPlans::Plan> plan(const WindowCall& call, int rank, int nranks, size_t areaBytes,
                                 bool inGraph, uint64_t firstRound) {
  const bool ownFromWindow = call.scaleInput || !call.sendIsDevice;
  const uint64_t es = call.elemSize;
  BRAID_ASSIGN_OR_RETURN(std::vector<algo::Schedule> all,
                         schedulesOf(call, nranks, areaBytes / es, ownFromWindow));
  LoweringLayout layout;
  layout.elemSize = es;
  layout.space = inGraph ? DeviceAddr::Space::kGraphRegion : DeviceAddr::Space::kHalf;
  layout.areaBytes = areaBytes;
  layout.firstRound = firstRound;
  layout.recvIsDevice = call.recvIsDevice;
  layout.scaleInput = call.scaleInput;
  layout.captured = call.captured;
  // The peers decide alike whatever their buffers: both layouts must allow it.
  bool writesOut = false;
  for (const algo::Schedule& s : all) {
    for (const algo::Step& st : s.steps)
      writesOut = writesOut || st.dst == algo::BufRef::kWindowOut;
  }
  bool split = false;
  if (writesOut) {
    BRAID_ASSIGN_OR_RETURN(std::vector<algo::Schedule> other,
                           schedulesOf(call, nranks, areaBytes / es, !ownFromWindow));
    split = !windowOutMayAlias(all) || !windowOutMayAlias(other);
  }
  if (split) {  // kWindowOut takes the half's second half
    const size_t part = areaBytes / 2 / es * es;
    BRAID_ASSIGN_OR_RETURN(all, schedulesOf(call, nranks, part / es, ownFromWindow));
    layout.areaBytes = part;
    layout.outBytes = part;
  }
  BRAID_ASSIGN_OR_RETURN(LoweredWindowCall lowered, lowerWindowSchedules(all, rank, layout));
  WindowPlans::Plan p;
  p.ops = std::move(lowered.ops);
  p.scratchBytes = lowered.scratchBytes;
  p.rounds = lowered.rounds;
  p.barriers = lowered.barriers;
  return p;
}

}  // namespace

const WindowPlans::Plan* WindowPlans::find(const Key& key) const {
  auto it = plans_.find(key);
  return it == plans_.end() ? nullptr : &it->second;
}

const WindowPlans::Plan& WindowPlans::add(const Key& key, Plan plan) {
  if (plans_.size() >= kMaxPlans) plans_.clear();
  return plans_.insert_or_assign(key, std::move(plan)).first->second;
}

// One round of the call's window schedule over an area of the region: the schedule's
// slots (whole lines) decide, not the region over nranks.
bool runsInGraphRegion(const WindowCall& call, int nranks, size_t graphBytes) {
  if (!call.captured || graphBytes == 0) return false;
  algo::CollArgs args;
  args.collective = call.collective;
  args.nranks = nranks;
  args.elemSize = static_cast<uint32_t>(call.elemSize);
  args.windowElems = graphBytes / call.elemSize;
  return algo::windowFits(args) && call.count <= algo::windowRoundElems(args);
}

Expected<WindowProgram> buildWindowCall(const WindowCall& call, int rank, int nranks,
                                        size_t halfBytes, WindowCounts* counts, size_t graphBytes,
                                        WindowPlans* plans) {
  const bool inGraph = runsInGraphRegion(call, nranks, graphBytes);
  // A captured call counts from zero, every replay alike.
  const WindowCounts from = call.captured ? WindowCounts{} : *counts;
  const uint64_t firstRound = from.rounds + 1;
  const int flags = call.twoShot | call.recvIsDevice << 1 | call.sendIsDevice << 2 |
                    call.scaleInput << 3 | call.captured << 4 | inGraph << 5;
  const WindowPlans::Key key{static_cast<int>(call.collective),
                             call.count,
                             call.elemSize,
                             call.root,
                             flags,
                             rank,
                             nranks,
                             halfBytes,
                             graphBytes,
                             static_cast<int>(firstRound % 2)};
  WindowPlans own;
  WindowPlans* cache = plans != nullptr ? plans : &own;
  const WindowPlans::Plan* p = cache->find(key);
  if (p == nullptr) {
    BRAID_ASSIGN_OR_RETURN(
        WindowPlans::Plan made,
        plan(call, rank, nranks, inGraph ? graphBytes : halfBytes, inGraph, firstRound));
    p = &cache->add(key, std::move(made));
  }
  WindowProgram program;
  program.ops = p->ops;
  program.scratchBytes = p->scratchBytes;
  if (call.captured) return program;  // flags: nothing counts on
  for (DeviceOp& op : program.ops) {
    if (op.kind == Kind::kArrive || op.kind == Kind::kWaitRank) op.value += from.barriers;
  }
  counts->rounds += p->rounds;
  counts->barriers += p->barriers;
  return program;
}

}  // namespace braid
