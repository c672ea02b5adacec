// Direct algorithms: every rank exchanges with every other rank at once (one
// batch per piece), then reduces locally in rank order 0..n-1, so every rank
// computes bitwise the same values. Latency is one exchange (one-shot) or two
// (two-shot), at the price of n-1 messages per rank per piece.
//
// Two forms: FIFO schedules (the exchange goes through the transports' FIFOs;
// every executor runs them) and window schedules (Schedule::windowed: ranks of
// one node read each other's windows or lent buffers; algorithms/schedule.h).
// A communicator whose windows cannot be set up runs the FIFO form.
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
// Every rank's input to the root, reduced there in rank order.
Schedule directReduce(const CollArgs& args);

// ---- Window schedules (direct_windows.cc). Require windowFits(args). ----
// One-shot (every rank reduces every rank's round) or two-shot (rank q reduces piece q
// of a round, then every rank copies every piece).
Schedule windowAllReduce(const CollArgs& args, bool twoShot);
Schedule windowAllGather(const CollArgs& args);
Schedule windowReduceScatter(const CollArgs& args);
Schedule windowBroadcast(const CollArgs& args);
Schedule windowAllToAll(const CollArgs& args);  // the pairwise pattern, all at once
// The root alone reads (reduce, gather) or writes (scatter) the windows; nothing is lent.
Schedule windowReduce(const CollArgs& args);
Schedule windowGather(const CollArgs& args);
Schedule windowScatter(const CollArgs& args);
// Whether a window area holds a round: one element (one per rank where a round carries a
// block per rank). The host's areas (4 KiB at the least) always do on one node.
bool windowFits(const CollArgs& args);
// Elements of one block's slot where a round carries a block per rank (reduce-scatter,
// all-to-all, scatter): the area over nranks, rounded down to whole 64-byte lines.
uint64_t windowSlotElems(const CollArgs& args);
// Elements of the call's count (per block, where a round carries a block per rank) that
// one round moves: a call of at most this many runs in one round.
uint64_t windowRoundElems(const CollArgs& args);
// Two-shot pieces: count over parts, rounded up to whole 64-byte lines (so no two ranks
// write one line); the last pieces may be short or empty.
uint64_t windowPieceElems(uint64_t count, int parts, uint32_t elemSize);

}  // namespace braid::algo
