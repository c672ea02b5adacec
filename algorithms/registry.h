// The algorithm families and which collectives each implements; builds a
// Schedule for (algorithm, CollArgs). Pure functions; thread-safe.
#pragma once

#include <string>

#include "algorithms/schedule.h"

namespace braid::algo {

enum class Algorithm : uint8_t {
  kRing,
  kTree,             // pipelined double binary tree
  kHalvingDoubling,  // recursive halving-doubling (Rabenseifner)
  kBruck,
  kPairwise,
  kLinear,           // root exchanges with every rank directly (gather, scatter)
  kDirect,           // every rank with every rank at once; one-shot all-reduce
  kTwoShot,          // all-reduce as direct reduce-scatter + direct all-gather
  kHierarchical,     // inside nodes, then across nodes along rails (CollArgs::nodeOf)
};
constexpr int kNumAlgorithms = 9;

const char* algorithmName(Algorithm a);
// "ring", "tree", "halving_doubling" (or "hd", "rabenseifner"), "bruck",
// "pairwise", "linear", "direct" (or "one_shot"), "two_shot", "hierarchical";
// case-insensitive.
bool parseAlgorithm(const std::string& name, Algorithm* out);
bool supports(Algorithm a, Collective c);
// Requires supports(a, args.collective).
Schedule buildSchedule(Algorithm a, const CollArgs& args);

// Window schedules (algorithms/schedule.h, "Window schedules"): all-reduce by kDirect
// (one-shot) or kTwoShot; all-gather, reduce-scatter, broadcast and reduce by kDirect;
// all-to-all by kPairwise; gather and scatter by kLinear.
bool supportsWindows(Algorithm a, Collective c);
// The window algorithm of a collective (all-reduce: `twoShot` picks); alike on every rank.
Algorithm windowAlgorithm(Collective c, bool twoShot = false);
// Requires supportsWindows(a, args.collective) and windowFits(args) (algorithms/direct).
Schedule buildWindowSchedule(Algorithm a, const CollArgs& args);

}  // namespace braid::algo
