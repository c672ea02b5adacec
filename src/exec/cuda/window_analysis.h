// What a call's window schedules (one per rank) say as a whole, for their lowering to the
// device windows (exec/cuda/window_lowering.h): the barrier values every rank agrees on,
// the checks that each wait has its signal, and whether kWindowOut may share kWindowIn's
// bytes. Private to the lowering.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/status.h"

namespace braid::window {

constexpr int kFlags = 3;  // algo::WinFlag's

inline Status refuse(const std::string& why) {
  return Status(braidInternalError, "device windows cannot run this window schedule: " + why);
}

inline int flagOf(const algo::Step& s) { return static_cast<int>(s.flag); }

// The barrier values of a call (exec/cuda/window_lowering.h).
struct Values {
  int rounds = 0;
  std::vector<uint64_t> of;  // [round * kFlags + flag]: 0 when no rank waits for it
  uint64_t count = 0;
  std::vector<std::vector<bool>> signalled;  // by rank, [round * kFlags + flag]
  uint64_t at(int round, int flag) const {
    return round < 0 ? 0 : of[static_cast<size_t>(round * kFlags + flag)];
  }
  bool signals(int rank, int round, int flag) const {
    return round >= 0 &&
           signalled[static_cast<size_t>(rank)][static_cast<size_t>(round * kFlags + flag)];
  }
};

// Calls fn(step, round) for each step of s (round -1 before the first kBeginRound).
template <typename Fn>
void eachStep(const algo::Schedule& s, Fn fn) {
  int round = -1;
  for (const algo::Step& st : s.steps) {
    if (st.op == algo::OpKind::kBeginRound) ++round;
    fn(st, round);
  }
}

// Whether s's step i, a kReducePeers into a buffer, is followed by the put of that result
// into a window area (two-shot's piece): the lowering reduces into the area and copies
// the result into the buffer from there.
bool fusesWithPut(const algo::Schedule& s, size_t i);

// The values, numbered in round order and, within a round, by flag; refuses ranks that
// disagree on the rounds, window steps before the first round and waits for no rank.
Expected<Values> valuesOf(const std::vector<algo::Schedule>& all);

// Every wait (and refill) has its peer's signal, each rank signals its values in order,
// and every rank signals kReady in the last round.
Status checkSignals(const std::vector<algo::Schedule>& all, const Values& v);

}  // namespace braid::window
