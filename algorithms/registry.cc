#include "algorithms/registry.h"

#include <cctype>

#include "algorithms/direct/direct.h"
#include "algorithms/halving_doubling/halving_doubling.h"
#include "algorithms/hierarchical/hierarchical.h"
#include "algorithms/linear/linear.h"
#include "algorithms/pairwise/pairwise.h"
#include "algorithms/ring/ring.h"
#include "algorithms/tree/tree.h"

namespace braid::algo {

const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kHalvingDoubling: return "halving_doubling";
    case Algorithm::kBruck: return "bruck";
    case Algorithm::kPairwise: return "pairwise";
    case Algorithm::kLinear: return "linear";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kTwoShot: return "two_shot";
    case Algorithm::kHierarchical: return "hierarchical";
  }
  return "?";
}

bool parseAlgorithm(const std::string& name, Algorithm* out) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "hd" || s == "rabenseifner" || s == "halving-doubling") s = "halving_doubling";
  if (s == "one_shot" || s == "oneshot" || s == "one-shot") s = "direct";
  if (s == "twoshot" || s == "two-shot") s = "two_shot";
  for (int i = 0; i < kNumAlgorithms; ++i) {
    if (s == algorithmName(static_cast<Algorithm>(i))) {
      *out = static_cast<Algorithm>(i);
      return true;
    }
  }
  return false;
}

bool supports(Algorithm a, Collective c) {
  switch (a) {
    case Algorithm::kRing:
      return c == Collective::kAllReduce || c == Collective::kAllGather ||
             c == Collective::kReduceScatter || c == Collective::kBroadcast ||
             c == Collective::kReduce;
    case Algorithm::kTree:
      return c == Collective::kAllReduce || c == Collective::kBroadcast || c == Collective::kReduce;
    case Algorithm::kHalvingDoubling:
      return c == Collective::kAllReduce || c == Collective::kReduceScatter ||
             c == Collective::kAllGather;
    case Algorithm::kBruck: return c == Collective::kAllToAll || c == Collective::kAllGather;
    case Algorithm::kPairwise: return c == Collective::kAllToAll || c == Collective::kAllToAllv;
    case Algorithm::kLinear: return c == Collective::kGather || c == Collective::kScatter;
    case Algorithm::kDirect:
      return c == Collective::kAllReduce || c == Collective::kAllGather ||
             c == Collective::kReduceScatter || c == Collective::kBroadcast ||
             c == Collective::kReduce;
    case Algorithm::kTwoShot: return c == Collective::kAllReduce;
    case Algorithm::kHierarchical:
      return c == Collective::kAllReduce || c == Collective::kAllGather ||
             c == Collective::kReduceScatter || c == Collective::kBroadcast;
  }
  return false;
}

Schedule buildSchedule(Algorithm a, const CollArgs& args) {
  using C = Collective;
  const C c = args.collective;
  switch (a) {
    case Algorithm::kRing:
      if (c == C::kAllReduce) return ringAllReduce(args);
      if (c == C::kAllGather) return ringAllGather(args);
      if (c == C::kReduceScatter) return ringReduceScatter(args);
      if (c == C::kBroadcast) return ringBroadcast(args);
      return ringReduce(args);
    case Algorithm::kTree:
      if (c == C::kAllReduce) return treeAllReduce(args);
      if (c == C::kBroadcast) return treeBroadcast(args);
      return treeReduce(args);
    case Algorithm::kHalvingDoubling:
      if (c == C::kAllReduce) return halvingDoublingAllReduce(args);
      if (c == C::kReduceScatter) return halvingDoublingReduceScatter(args);
      return halvingDoublingAllGather(args);
    case Algorithm::kBruck:
      if (c == C::kAllToAll) return bruckAllToAll(args);
      return bruckAllGather(args);
    case Algorithm::kPairwise:
      if (c == C::kAllToAll) return pairwiseAllToAll(args);
      return pairwiseAllToAllv(args);
    case Algorithm::kLinear:
      if (c == C::kGather) return linearGather(args);
      return linearScatter(args);
    case Algorithm::kDirect:
      if (c == C::kAllReduce) return directAllReduce(args);
      if (c == C::kAllGather) return directAllGather(args);
      if (c == C::kReduceScatter) return directReduceScatter(args);
      if (c == C::kReduce) return directReduce(args);
      return directBroadcast(args);
    case Algorithm::kTwoShot: return twoShotAllReduce(args);
    case Algorithm::kHierarchical:
      if (c == C::kAllReduce) return hierarchicalAllReduce(args);
      if (c == C::kAllGather) return hierarchicalAllGather(args);
      if (c == C::kReduceScatter) return hierarchicalReduceScatter(args);
      return hierarchicalBroadcast(args);
  }
  return Schedule{};
}

bool supportsWindows(Algorithm a, Collective c) {
  using C = Collective;
  switch (c) {
    case C::kAllReduce: return a == Algorithm::kDirect || a == Algorithm::kTwoShot;
    case C::kAllToAll: return a == Algorithm::kPairwise;
    case C::kAllToAllv: return false;
    default: return a == windowAlgorithm(c);
  }
}

Algorithm windowAlgorithm(Collective c, bool twoShot) {
  switch (c) {
    case Collective::kAllReduce: return twoShot ? Algorithm::kTwoShot : Algorithm::kDirect;
    case Collective::kAllToAll:
    case Collective::kAllToAllv: return Algorithm::kPairwise;
    case Collective::kGather:
    case Collective::kScatter: return Algorithm::kLinear;
    default: return Algorithm::kDirect;
  }
}

Schedule buildWindowSchedule(Algorithm a, const CollArgs& args) {
  switch (args.collective) {
    case Collective::kAllReduce: return windowAllReduce(args, a == Algorithm::kTwoShot);
    case Collective::kAllGather: return windowAllGather(args);
    case Collective::kReduceScatter: return windowReduceScatter(args);
    case Collective::kBroadcast: return windowBroadcast(args);
    case Collective::kReduce: return windowReduce(args);
    case Collective::kGather: return windowGather(args);
    case Collective::kScatter: return windowScatter(args);
    case Collective::kAllToAll: return windowAllToAll(args);
    case Collective::kAllToAllv: break;
  }
  return Schedule{};
}

}  // namespace braid::algo
