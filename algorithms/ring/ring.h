// Ring algorithms: pure rank arithmetic, no transports.
//
// All-reduce is reduce-scatter followed by all-gather around the ring
// rank -> rank+1. The buffer is processed in rounds of nranks chunks of at most
// maxStepElems each, so the first send of every round fits in one FIFO.
// Each final value is computed by exactly one rank and copied to the others,
// so every rank ends with bitwise-identical results.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

Schedule ringAllReduce(const CollArgs& args);

}  // namespace braid::algo

namespace braid::algo {

// All-gather around the ring: n-1 steps per round, each rank forwarding the
// block it received last.
Schedule ringAllGather(const CollArgs& args);
// Reduce-scatter around the ring: rank r ends with block r.
Schedule ringReduceScatter(const CollArgs& args);
// Broadcast as a pipelined chain root -> root+1 -> ... (slices pipelined).
Schedule ringBroadcast(const CollArgs& args);
// Reduce as a pipelined chain ending at the root.
Schedule ringReduce(const CollArgs& args);

}  // namespace braid::algo
