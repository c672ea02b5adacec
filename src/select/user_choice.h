// Loaded schedule files (algorithms/file/schedule_file.h) as the selector sees them: which
// calls a file serves (and, for logs, why not), and its price, found by walking its steps
// over the communicator's links with the cost model's figures (cost_model.h): a message of
// b bytes between ranks p and q costs the link's alpha plus b over its bandwidth; a rank's
// sends share its link one after another; a receive waits for its message; the steps of a
// batch start together. The predicted time is the last rank's end, so a program is priced
// by its critical path and its busiest link, as the closed forms price the built-ins
// (a ring program walks to 2(n-1) alpha + 2(n-1)/n S / B, the ring's form). Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/file/schedule_file.h"
#include "select/cost_model.h"

namespace braid {

// What the selector knows of a call beyond its collective and size, where it knows it
// (braidCommGetAlgorithm does not).
struct CallFit {
  bool inPlace = false;
  std::string dtype;  // "float32", ...
  std::string op;     // "sum", ...; empty for movement collectives
  int root = 0;
};

// "" where `f` serves a call of `c` with `rankBytes` (count x element size) on `nranks`
// ranks (and `fit`, when given); else why not ("its sizes are [0, 65536) bytes"). With
// `in`, a window program serves only a communicator with shared windows (one node over
// shm).
std::string whyNotServed(const algo::AlgoFile& f, algo::Collective c, uint64_t rankBytes,
                         int nranks, const CallFit* fit, const CostInputs* in = nullptr);

// The first of `names` (the loaded algorithms a BRAID_ALGO rule lists for a call) among
// `loaded` that serves the call; else an error quoting `spec` and saying, per name, why not.
// `in` as whyNotServed's.
Expected<const algo::AlgoFile*> firstServing(
    const std::vector<std::shared_ptr<const algo::AlgoFile>>& loaded,
    const std::vector<std::string>& names, algo::Collective c, uint64_t rankBytes, int nranks,
    const CallFit* fit, const std::string& spec, const CostInputs* in = nullptr);

// Predicted microseconds of `f`'s program for in.nranks ranks with `rankBytes` per block;
// +infinity where it has none. Ranks lie in blocks of in.ranksPerNode (one node each).
// A window program is priced round by round over the node's link: a round costs the
// link's alpha (its flags) plus the most bytes any rank puts and reads in it over the
// link's bandwidth, as the closed forms price the direct algorithms' windows.
double priceProgramUs(const algo::AlgoFile& f, uint64_t rankBytes, const CostInputs& in);

}  // namespace braid
