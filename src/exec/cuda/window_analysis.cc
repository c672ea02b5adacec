#include "exec/cuda/window_analysis.h"

#include <algorithm>

#include "exec/cuda/window_lowering.h"

namespace braid::window {

using algo::BufRef;
using algo::OpKind;
using algo::Schedule;
using algo::Step;
using algo::WinFlag;

bool fusesWithPut(const Schedule& s, size_t i) {
  if (i + 1 >= s.steps.size() || !algo::putsReduced(s.steps[i], s.steps[i + 1])) return false;
  // The device writes the piece where it read this rank's term: the same offset.
  const Step& st = s.steps[i];
  const Step& put = s.steps[i + 1];
  return put.dst == BufRef::kWindowOut && put.dstOffset == st.srcOffset &&
         st.src == BufRef::kWindowIn;
}

Expected<Values> valuesOf(const std::vector<Schedule>& all) {
  const int n = static_cast<int>(all.size());
  Values v;
  for (int q = 0; q < n; ++q) {
    int rounds = 0;
    for (const Step& st : all[q].steps) rounds += st.op == OpKind::kBeginRound;
    if (q == 0) v.rounds = rounds;
    if (rounds != v.rounds) return refuse("ranks 0 and " + std::to_string(q) + " differ in rounds");
  }
  std::vector<bool> used(static_cast<size_t>(v.rounds * kFlags), false);
  v.signalled.assign(static_cast<size_t>(n), used);
  if (v.rounds > 0) used[(v.rounds - 1) * kFlags + static_cast<int>(WinFlag::kReady)] = true;
  for (int q = 0; q < n; ++q) {
    Status bad = Status::ok();
    eachStep(all[q], [&](const Step& st, int r) {
      if (algo::isWindowStep(st.op) && st.op != OpKind::kBeginRound && r < 0) {
        bad = refuse("a window step before the first round");
      } else if (st.op == OpKind::kSignal) {
        v.signalled[q][r * kFlags + flagOf(st)] = true;
      } else if (st.op == OpKind::kWait) {
        if (st.recvPeer >= n) bad = refuse("a wait for rank " + std::to_string(st.recvPeer));
        used[r * kFlags + flagOf(st)] = true;
      } else if (st.op == OpKind::kBeginRound && st.writes && r >= 1) {
        used[(r - 1) * kFlags + static_cast<int>(WinFlag::kReady)] = true;
      }
    });
    BRAID_TRY(bad);
  }
  v.of.assign(used.size(), 0);
  for (size_t i = 0; i < used.size(); ++i) v.of[i] = used[i] ? ++v.count : 0;
  return v;
}

// Every wait has its signal, and each rank signals its values in order.
Status checkSignals(const std::vector<Schedule>& all, const Values& v) {
  const int n = static_cast<int>(all.size());
  const int ready = static_cast<int>(WinFlag::kReady);
  for (int q = 0; q < n; ++q) {
    uint64_t last = 0;
    Status bad = Status::ok();
    eachStep(all[q], [&](const Step& st, int r) {
      if (!bad.isOk()) return;
      if (st.op == OpKind::kSignal) {
        const uint64_t value = v.at(r, flagOf(st));
        if (value != 0 && value <= last) {
          bad = refuse("rank " + std::to_string(q) + " signals out of order");
        }
        last = std::max(last, value);
      }
      const bool waits = st.op == OpKind::kWait;
      if (!waits && !(st.op == OpKind::kBeginRound && st.writes && r >= 1)) return;
      const int round = waits ? r : r - 1, flag = waits ? flagOf(st) : ready;
      for (int p = 0; p < n; ++p) {
        if (p == q || (waits && st.recvPeer >= 0 && st.recvPeer != p)) continue;
        if (!v.signals(p, round, flag)) {
          bad = refuse("rank " + std::to_string(q) + " round " + std::to_string(r) +
                       " waits for a flag rank " + std::to_string(p) + " never raises");
        }
      }
    });
    BRAID_TRY(bad);
    if (v.rounds > 0 && !v.signals(q, v.rounds - 1, ready)) {
      return refuse("rank " + std::to_string(q) + " does not signal its last round");
    }
  }
  return Status::ok();
}

namespace {

struct Range {
  uint64_t lo, hi;
  bool overlaps(const Range& o) const { return lo < o.hi && o.lo < hi; }
};

// Where each rank writes its kWindowOut in one round, and what may not overlap it: the
// ranges of its kWindowIn that any rank reads in the round (its own read in the very step
// that writes the same range aside), and its puts into kWindowIn after its first
// kWindowOut write.
struct RoundUse {
  std::vector<Range> writes, reads;
};

// Rank q's steps' uses of every rank's areas, by round ([round][rank]).
void collect(const std::vector<Schedule>& all, int q, std::vector<std::vector<RoundUse>>* use) {
  const Schedule& s = all[static_cast<size_t>(q)];
  int round = -1;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    if (st.op == OpKind::kBeginRound) ++round;
    if (round < 0 || round >= static_cast<int>(use->size()) || st.count == 0) continue;
    std::vector<RoundUse>& u = (*use)[static_cast<size_t>(round)];
    RoundUse& own = u[static_cast<size_t>(q)];
    const Range to{st.dstOffset, st.dstOffset + st.count};
    if (st.dst == BufRef::kWindowOut) own.writes.push_back(to);
    if (st.op == OpKind::kPut && st.dst == BufRef::kWindowIn && !own.writes.empty()) {
      own.reads.push_back(to);
    }
    if (st.src != BufRef::kWindowIn) continue;
    const Range from{st.srcOffset, st.srcOffset + st.count};
    if (st.op == OpKind::kCopyPeer && st.recvPeer != q && st.recvPeer >= 0 &&
        st.recvPeer < static_cast<int>(u.size())) {
      u[static_cast<size_t>(st.recvPeer)].reads.push_back(from);
    }
    if (st.op != OpKind::kReducePeers) continue;
    // The writing step itself, element by element.
    const bool writesThere =
        fusesWithPut(s, i) || (st.dst == BufRef::kWindowOut && st.dstOffset == st.srcOffset);
    for (size_t p = 0; p < u.size(); ++p) {
      const bool self = static_cast<int>(p) == q;
      if (!self || (!st.ownFromBuffer && !writesThere)) u[p].reads.push_back(from);
    }
  }
}

}  // namespace

}  // namespace braid::window

namespace braid {

bool windowOutMayAlias(const std::vector<algo::Schedule>& all) {
  size_t rounds = 0;
  for (const algo::Schedule& s : all) {
    size_t r = 0;
    for (const algo::Step& st : s.steps) r += st.op == algo::OpKind::kBeginRound;
    rounds = std::max(rounds, r);
  }
  std::vector<std::vector<window::RoundUse>> use(rounds, std::vector<window::RoundUse>(all.size()));
  for (int q = 0; q < static_cast<int>(all.size()); ++q) window::collect(all, q, &use);
  for (const auto& round : use) {
    for (const window::RoundUse& u : round) {
      for (const window::Range& w : u.writes) {
        for (const window::Range& r : u.reads) {
          if (w.overlaps(r)) return false;
        }
      }
    }
  }
  return true;
}

}  // namespace braid
