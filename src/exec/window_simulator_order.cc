// The windows' simulator's operands and happens-before: where a step's operands lie,
// which accesses peers may race on, and the end of a call that lent a buffer.
#include <algorithm>

#include "exec/window_simulator_internal.h"

namespace braid::wsim {
namespace {

const char* regionName(int region) {
  switch (region) {
    case kStoreIn:
      return "input";
    case kStoreOut:
      return "output";
    default:
      return region % 2 == 0 ? "window input area" : "window output area";
  }
}

std::string range(uint64_t lo, uint64_t hi) {
  return "bytes [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
}

bool overlap(const Access& a, uint64_t lo, uint64_t hi) { return a.lo < hi && lo < a.hi; }

Status outOfBounds(const std::string& where, const std::string& what, uint64_t off, uint64_t count,
                   uint64_t elems) {
  const uint64_t end = count > UINT64_MAX - off ? UINT64_MAX : off + count;
  return invalidUsage("out of bounds: " + where + " " + what + " elements [" + std::to_string(off) +
                      ", " + std::to_string(end) + ") but it holds " + std::to_string(elems) +
                      " elements");
}

}  // namespace

void WindowSimulator::sync(int r, const Clock& other) {
  Clock& c = ranks_[r].clock;
  for (int q = 0; q < n_; ++q) c[q] = std::max(c[q], other[q]);
}

std::string WindowSimulator::who(const Access& a) const {
  return "rank " + std::to_string(a.rank) + " (call " + std::to_string(a.call) + " step " +
         std::to_string(a.step) + ", round " + std::to_string(a.round) + ")";
}

Expected<Span> WindowSimulator::own(int r, BufRef ref, uint64_t offset, uint64_t count,
                                    const char* what) {
  RankState& s = ranks_[r];
  const WindowSimCall& call = calls_[s.call];
  const size_t es = elemBytes(call);
  Buffer b;
  if (ref == BufRef::kScratch) {
    b = Buffer{s.scratch.data(), s.scratch.size() / es, 2};
  } else {
    b = sim::userBuffer((*call.ranks)[r], ref, es);
  }
  if (offset > b.elems || count > b.elems - offset) {
    return outOfBounds(at(r), std::string(what) + " its " + algo::bufRefName(ref), offset, count,
                       b.elems);
  }
  Span sp{b.data + offset * es, (b.elems - offset) * es};
  if (b.storage == 2) return sp;
  SimRank& rk = (*call.ranks)[r];
  const uint8_t* base = b.storage == 0 ? rk.input.data() : rk.output.data();
  sp.owner = r;
  sp.region = b.storage == 0 ? kStoreIn : kStoreOut;
  sp.at = static_cast<uint64_t>(sp.data - base);
  return sp;
}

Expected<Span> WindowSimulator::area(int owner, int r, BufRef ref, uint64_t offset,
                                     uint64_t count) {
  const size_t es = elemBytes(calls_[ranks_[r].call]);
  const uint64_t elems = opts_.windowBytes / es;
  const bool out = ref == BufRef::kWindowOut;
  if (offset > elems || count > elems - offset) {
    return outOfBounds(at(r), "touches rank " + std::to_string(owner) + "'s " + regionName(out),
                       offset, count, elems);
  }
  const int region =
      areaRegion(static_cast<int>(ranks_[r].round % 2), out && !opts_.oneAreaPerHalf);
  Span sp;
  sp.data = ranks_[owner].window.data() + region * opts_.windowBytes + offset * es;
  sp.bytes = (elems - offset) * es;
  sp.owner = owner;
  sp.region = region;
  sp.at = offset * es;
  return sp;
}

Expected<Span> WindowSimulator::term(int r, int q, const Step& st, bool ownBuffer) {
  const size_t c = ranks_[r].call;
  const BufRef buf = st.src == BufRef::kWindowIn ? BufRef::kInput : BufRef::kOutput;
  if (q == r && (ownBuffer || lends(c, r, st.src))) {
    return own(r, buf, st.bufOffset, st.count, "reads");
  }
  if (q == r || !lends(c, q, st.src)) return area(q, r, st.src, st.srcOffset, st.count);
  // Rank q's lent buffer: published with its kReady of this round, returned at its end.
  const RankState& owner = ranks_[q];
  const std::string what = "rank " + std::to_string(q) + "'s lent " + algo::bufRefName(buf);
  if (owner.call != c) {
    return invalidUsage("race: " + at(r) + " reads " + what + " of call " + std::to_string(c) +
                        (owner.call < c ? " before rank " + std::to_string(q) + " lends it"
                                        : " after rank " + std::to_string(q) + " returns"));
  }
  const uint64_t idx = ranks_[r].round - opts_.roundsBefore - 1;
  if (owner.readyClock.size() <= idx || ranks_[r].clock[q] < owner.readyClock[idx]) {
    return invalidUsage("race: " + at(r) + " reads " + what +
                        " not ordered after its kReady of this round, which lends it");
  }
  const size_t es = elemBytes(calls_[c]);
  SimRank& rk = (*calls_[c].ranks)[q];
  const Buffer b = sim::userBuffer(rk, buf, es);
  if (st.bufOffset > b.elems || st.count > b.elems - st.bufOffset) {
    return outOfBounds(at(r), "reads " + what, st.bufOffset, st.count, b.elems);
  }
  Span sp{b.data + st.bufOffset * es, (b.elems - st.bufOffset) * es, q,
          b.storage == 0 ? kStoreIn : kStoreOut};
  sp.at = static_cast<uint64_t>(sp.data - (b.storage == 0 ? rk.input.data() : rk.output.data()));
  return sp;
}

Status WindowSimulator::noteWrite(int r, const Span& s, uint64_t bytes) {
  if (s.owner < 0) return Status::ok();
  RankState& me = ranks_[r];
  Tracked& t = ranks_[s.owner].tracked[s.region];
  const uint64_t lo = s.at, hi = s.at + bytes;
  for (const Access& a : t.reads) {
    if (!overlap(a, lo, hi) || me.clock[a.rank] >= a.clock) continue;
    return invalidUsage("race: " + at(r) + " writes its " + regionName(s.region) + " " +
                        range(lo, hi) + " while " + who(a) + " may still read " +
                        range(a.lo, a.hi) + " of it (its read is not ordered before this write" +
                        (s.region < kStoreIn ? ": kBeginRound with writes must order it)"
                                             : ": the buffer is lent)"));
  }
  // Reads ordered before this write are ordered before every later one.
  auto& reads = t.reads;
  reads.erase(std::remove_if(reads.begin(), reads.end(),
                             [&](const Access& a) { return me.clock[a.rank] >= a.clock; }),
              reads.end());
  auto& writes = t.writes;
  if (s.region < kStoreIn) {  // an area holds one round's data
    writes.erase(std::remove_if(writes.begin(), writes.end(),
                                [&](const Access& a) { return a.round != me.round; }),
                 writes.end());
  }
  writes.push_back(Access{lo, hi, r, me.clock[r], me.round, me.call, me.step});
  return Status::ok();
}

Status WindowSimulator::noteRead(int r, const Span& s, uint64_t bytes, bool lentOutput) {
  if (s.owner < 0) return Status::ok();
  RankState& me = ranks_[r];
  Tracked& t = ranks_[s.owner].tracked[s.region];
  const uint64_t lo = s.at, hi = s.at + bytes;
  const bool isArea = s.region < kStoreIn;
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (const Access& w : t.writes) {
    if (!overlap(w, lo, hi) || (isArea && w.round != me.round)) continue;
    if (s.owner != r && me.clock[w.rank] < w.clock) {
      return invalidUsage("race: " + at(r) + " reads rank " + std::to_string(s.owner) + "'s " +
                          regionName(s.region) + " " + range(lo, hi) +
                          ", not ordered after its write of " + range(w.lo, w.hi) + " by " +
                          who(w) + " (a wait for its flag is missing)");
    }
    got.emplace_back(std::max(lo, w.lo), std::min(hi, w.hi));
  }
  // Areas hold only what was put this round; a lent output, only what its owner wrote.
  if (isArea || lentOutput) {
    std::sort(got.begin(), got.end());
    uint64_t end = lo;
    for (const auto& g : got) {
      if (g.first > end) break;
      end = std::max(end, g.second);
    }
    if (end < hi) {
      return invalidUsage("race: " + at(r) + " reads rank " + std::to_string(s.owner) + "'s " +
                          regionName(s.region) + " " + range(end, hi) +
                          ", which it has not written " +
                          (isArea ? "in this round (stale data)" : "in this call"));
    }
  }
  if (s.owner != r) t.reads.push_back(Access{lo, hi, r, me.clock[r], me.round, me.call, me.step});
  return Status::ok();
}

Status WindowSimulator::endCall(int r) {
  RankState& s = ranks_[r];
  const bool lent = lendIn_[s.call][r] || lendOut_[s.call][r];
  if (lent && s.round != s.callFirstRound) {
    for (int q = 0; q < n_; ++q) {
      if (q != r) sync(r, ranks_[q].flagClocks[int(WinFlag::kFinished)]);
    }
  }
  // The caller may write its buffers now: every peer's read of them must be over.
  for (int region : {kStoreIn, kStoreOut}) {
    Tracked& t = s.tracked[region];
    for (const Access& a : t.reads) {
      if (s.clock[a.rank] >= a.clock) continue;
      return invalidUsage("race: " + who(a) + " reads rank " + std::to_string(r) + "'s lent " +
                          regionName(region) + " " + range(a.lo, a.hi) + " after rank " +
                          std::to_string(r) + " returns from call " + std::to_string(s.call) +
                          " (no kFinished it waits for comes after the read)");
    }
    t.reads.clear();
    t.writes.clear();
  }
  return Status::ok();
}

}  // namespace braid::wsim
