// The simulator's proof of a schedule file (algorithms/file/schedule_file.h) for one rank
// count: every rank's schedule, instantiated at counts that exercise the program's chunking
// (0, 1, nranks - 1, nranks + 1, a large odd count, and that count in passes of a small
// step), in place and out of place as the file claims, runs in the simulator
// (exec/simulator.h) twice, with the outputs and scratch filled differently, and must end
// with results equal to an independent reference both times. So a file is refused for a
// deadlock, a message never received, a size mismatch, a race in a batch, an access out of
// bounds, a read of output or scratch before the write it needs (the two fills disagree),
// or a wrong result; the message names the file, the rank count, the count, the rank, the
// step and the fault. A FIFO schedule's peers never read its memory (every message is a
// copy), so a write a peer may still read cannot happen in it. A window program runs in
// the windows' simulator (exec/window_simulator.h) instead: two calls back to back, lent
// and not, in rank order and a seeded one, in windows small enough for passes; it refuses
// a read before the peer's put, a put or write a peer may still read, and a lender that
// returns too early. Where the file lists avg, every probe runs with avg too (float32
// multiples of the rank count: exact averages). Expected values come from
// algorithms/reference.h. Pure; thread-safe.
#pragma once

#include <string>

#include "algorithms/file/schedule_file.h"
#include "core/status.h"

namespace braid {

// Proves `file` for `nranks` ranks; `where` names the file in messages.
Status proveAlgorithm(const algo::AlgoFile& file, int nranks, const std::string& where);

// The counts the proof runs for `nranks` ranks, within the file's sizes (empty: the sizes
// hold no count of the file's element type, which refuses it).
std::vector<uint64_t> proofCounts(const algo::AlgoFile& file, int nranks);

}  // namespace braid
