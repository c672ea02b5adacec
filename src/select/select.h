// Algorithm selection: a size-and-rank rule of thumb per collective (until the
// topology-aware cost model lands), overridden by BRAID_ALGO.
//
// BRAID_ALGO grammar (NCCL_ALGO's, extended with per-collective size ranges):
//   spec   := item (('#' | ';') item)*
//   item   := [collective ':'] [lo '-' hi ':'] ['^'] algo (',' algo)*
//   lo, hi := sizes in bytes with k/m/g suffixes; hi may be "inf"
// e.g. "ring", "allreduce:ring,tree", "allreduce:0-64k:tree#allreduce:64k-inf:ring",
// "^tree". The first item that matches a call's collective and size decides:
// a list picks its first algorithm that implements the collective (none is an
// error, never a silent fallback); '^' removes algorithms from the default
// choice. Immutable after parse; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/status.h"

namespace braid {

class AlgoPolicy {
 public:
  static Expected<AlgoPolicy> parse(const std::string& spec);
  // The algorithm for one call (bytes: the collective's per-rank buffer size;
  // nodes: how many nodes the communicator spans).
  Expected<algo::Algorithm> choose(algo::Collective c, uint64_t bytes, int nranks,
                                   int nodes = 1) const;
  const std::string& spec() const { return spec_; }

 private:
  struct Rule {
    int collective = -1;  // -1: every collective
    uint64_t lo = 0;
    uint64_t hi = UINT64_MAX;
    bool exclude = false;
    std::vector<algo::Algorithm> algos;
  };
  static Expected<Rule> parseItem(const std::string& item);

  std::string spec_;
  std::vector<Rule> rules_;
};

// The rule of thumb: candidates for (collective, bytes, nranks), best first.
std::vector<algo::Algorithm> defaultAlgorithms(algo::Collective c, uint64_t bytes, int nranks,
                                               int nodes = 1);
bool parseCollective(const std::string& name, algo::Collective* out);

}  // namespace braid
