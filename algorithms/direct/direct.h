// Direct algorithms: every rank exchanges with every other rank at once (one
// batch per piece), then reduces locally in rank order 0..n-1, so every rank
// computes bitwise the same values. Latency is one exchange (one-shot) or two
// (two-shot), at the price of n-1 messages per rank per piece.
//
// Today the exchange goes through the transports' FIFOs; mapping peers' user
// buffers for true load/store is a transport capability still to come (the
// schedules stay the same: the executor would read peers' inputs in place).
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

// One-shot all-reduce: everyone sends its whole input to everyone.
Schedule directAllReduce(const CollArgs& args);
// Two-shot all-reduce: direct reduce-scatter (rank r reduces chunk r), then
// direct all-gather of the reduced chunks.
Schedule twoShotAllReduce(const CollArgs& args);
Schedule directAllGather(const CollArgs& args);
Schedule directReduceScatter(const CollArgs& args);
Schedule directBroadcast(const CollArgs& args);

}  // namespace braid::algo
