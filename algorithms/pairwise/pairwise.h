// Exchange algorithms for all-to-all: pairwise exchange (n-1 rounds, in round
// k send to rank+k while receiving from rank-k, as one batch) and Bruck's
// log2(n)-round algorithm with local rotations through scratch (fewer, larger
// messages: wins for small blocks). Bruck also gives an all-gather.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

Schedule pairwiseAllToAll(const CollArgs& args);
Schedule pairwiseAllToAllv(const CollArgs& args);
Schedule bruckAllToAll(const CollArgs& args);
Schedule bruckAllGather(const CollArgs& args);

}  // namespace braid::algo
