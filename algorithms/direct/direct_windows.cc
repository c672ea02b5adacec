// The direct collectives as window schedules (algorithms/schedule.h, "Window schedules"):
// the rounds, puts, flags and reads the host's shared windows and the device windows
// execute. Each builder lays a call out as the host windows have always run it, because
// their speed depends on it:
//  - a round moves at most one window area (CollArgs::windowElems); collectives that move
//    a block for every rank in a round (reduce-scatter, all-to-all, scatter) give each
//    block a slot of area / n rounded down to a cache line, so no two ranks' blocks share
//    a line;
//  - two-shot all-reduce splits a round into pieces of whole cache lines (pieceElems);
//  - out of place and unscaled, a rank reads its own term from its own input (cached, and
//    one copy fewer), so it puts only what peers read;
//  - a rank waits for the peers it reads one by one where it can start on the first
//    before the last is there (all-gather, all-to-all, the two-shot's second half).
#include <algorithm>

#include "algorithms/builder.h"
#include "algorithms/direct/direct.h"

namespace braid::algo {
namespace {

constexpr uint64_t kLineBytes = 64;

// Appends window steps to a schedule; data steps of no elements are left out.
class WinSteps {
 public:
  explicit WinSteps(Schedule* s) : s_(s) {}

  void begin(bool writes) {
    Step st{OpKind::kBeginRound};
    st.writes = writes;
    s_->steps.push_back(st);
  }
  void put(BufRef src, uint64_t srcOff, BufRef dst, uint64_t dstOff, uint64_t count) {
    if (count != 0) s_->steps.push_back({OpKind::kPut, src, dst, -1, -1, srcOff, dstOff, count});
  }
  void signal(WinFlag f) {
    Step st{OpKind::kSignal};
    st.flag = f;
    s_->steps.push_back(st);
  }
  void wait(int peer, WinFlag f) {
    Step st{OpKind::kWait};
    st.recvPeer = peer;
    st.flag = f;
    s_->steps.push_back(st);
  }
  // dst at dstOff = the reduction (final) of every rank's area `src` at srcOff.
  void reducePeers(BufRef src, uint64_t srcOff, BufRef dst, uint64_t dstOff, uint64_t count,
                   uint64_t bufOff, bool ownFromBuffer) {
    if (count == 0) return;
    Step st{OpKind::kReducePeers, src, dst, -1, -1, srcOff, dstOff, count};
    st.final = true;
    st.bufOffset = bufOff;
    st.ownFromBuffer = ownFromBuffer;
    s_->steps.push_back(st);
  }
  void copyPeer(int peer, BufRef src, uint64_t srcOff, BufRef dst, uint64_t dstOff, uint64_t count,
                uint64_t bufOff) {
    if (count == 0) return;
    Step st{OpKind::kCopyPeer, src, dst, -1, peer, srcOff, dstOff, count};
    st.bufOffset = bufOff;
    s_->steps.push_back(st);
  }
  void copy(BufRef src, uint64_t srcOff, BufRef dst, uint64_t dstOff, uint64_t count) {
    if (count != 0) s_->steps.push_back({OpKind::kCopy, src, dst, -1, -1, srcOff, dstOff, count});
  }

 private:
  Schedule* s_;
};

Schedule windowSchedule(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.windowed = true;
  return s;
}

// Elements a round moves per area.
uint64_t roundElems(const CollArgs& a) { return std::max<uint64_t>(1, a.windowElems); }

// Whether a round carries a block for every rank (in a slot each, windowSlotElems).
bool blocksPerRound(Collective c) {
  return c == Collective::kReduceScatter || c == Collective::kAllToAll || c == Collective::kScatter;
}

// Whether this rank reads its own term from its own buffer: out of place and unscaled.
bool ownFromInput(const CollArgs& a) { return !a.inPlace && !a.scaledPut; }

}  // namespace

uint64_t windowSlotElems(const CollArgs& a) {
  const uint64_t es = std::max<uint32_t>(1, a.elemSize);
  const uint64_t n = static_cast<uint64_t>(std::max(1, a.nranks));
  const uint64_t slot = a.windowElems * es / n / kLineBytes * kLineBytes / es;
  return slot != 0 ? slot : std::max<uint64_t>(1, a.windowElems / n);
}

bool windowFits(const CollArgs& a) {
  return a.windowElems >=
         (blocksPerRound(a.collective) ? static_cast<uint64_t>(std::max(1, a.nranks)) : 1);
}

uint64_t windowRoundElems(const CollArgs& a) {
  return blocksPerRound(a.collective) ? windowSlotElems(a) : roundElems(a);
}

uint64_t windowPieceElems(uint64_t count, int parts, uint32_t elemSize) {
  const uint64_t line = std::max<uint64_t>(1, kLineBytes / std::max<uint32_t>(1, elemSize));
  const uint64_t p = (count + parts - 1) / static_cast<uint64_t>(parts);
  return (p + line - 1) / line * line;
}

Schedule windowAllReduce(const CollArgs& a, bool twoShot) {
  Schedule s = windowSchedule(a);
  s.lendsInput = ownFromInput(a);
  s.lendsOutput = twoShot && s.lendsInput;
  WinSteps w(&s);
  const int n = a.nranks, me = a.rank;
  // Out of place and unscaled, peers read only their own pieces of this rank's input.
  const bool putPeersPieces = twoShot && ownFromInput(a);
  for (uint64_t off = 0; off < a.count; off += roundElems(a)) {
    const uint64_t m = std::min(roundElems(a), a.count - off);
    const uint64_t piece = windowPieceElems(m, n, a.elemSize);
    auto lo = [&](int q) { return std::min(m, piece * static_cast<uint64_t>(q)); };
    auto hi = [&](int q) { return std::min(m, lo(q) + piece); };
    w.begin(true);
    if (putPeersPieces) {
      for (int q = 0; q < n; ++q) {
        if (q != me) w.put(BufRef::kInput, off + lo(q), BufRef::kWindowIn, lo(q), hi(q) - lo(q));
      }
    } else {
      w.put(BufRef::kInput, off, BufRef::kWindowIn, 0, m);
    }
    w.signal(WinFlag::kReady);
    w.wait(-1, WinFlag::kReady);
    if (!twoShot) {
      w.reducePeers(BufRef::kWindowIn, 0, BufRef::kOutput, off, m, off, ownFromInput(a));
      w.signal(WinFlag::kFinished);
      continue;
    }
    // This rank's piece into its output, and from there into its window for peers
    // (executors fuse the two; a rank that lends its output skips the put).
    const uint64_t mine = hi(me) - lo(me);
    w.reducePeers(BufRef::kWindowIn, lo(me), BufRef::kOutput, off + lo(me), mine, off + lo(me),
                  ownFromInput(a));
    w.put(BufRef::kOutput, off + lo(me), BufRef::kWindowOut, lo(me), mine);
    w.signal(WinFlag::kDone);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      if (hi(q) == lo(q)) continue;
      w.wait(q, WinFlag::kDone);
      w.copyPeer(q, BufRef::kWindowOut, lo(q), BufRef::kOutput, off + lo(q), hi(q) - lo(q),
                 off + lo(q));
    }
    w.signal(WinFlag::kFinished);
  }
  return s;
}

Schedule windowAllGather(const CollArgs& a) {
  Schedule s = windowSchedule(a);
  // In place too: peers read this rank's block, and it writes only theirs.
  s.lendsInput = true;
  WinSteps w(&s);
  const int n = a.nranks, me = a.rank;
  for (uint64_t off = 0; off < a.count; off += roundElems(a)) {
    const uint64_t m = std::min(roundElems(a), a.count - off);
    w.begin(true);
    w.put(BufRef::kInput, off, BufRef::kWindowIn, 0, m);
    w.signal(WinFlag::kReady);
    if (!a.inPlace) w.copy(BufRef::kInput, off, BufRef::kOutput, me * a.count + off, m);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      w.wait(q, WinFlag::kReady);
      w.copyPeer(q, BufRef::kWindowIn, 0, BufRef::kOutput, q * a.count + off, m, off);
    }
    w.signal(WinFlag::kFinished);
  }
  return s;
}

namespace {

// Elements [off, off + m) of every block of the input into this rank's window, block j
// at slot j; `skip`: a block not put (-1: none).
void putBlocks(WinSteps& w, const CollArgs& a, uint64_t off, uint64_t m, int skip) {
  const uint64_t slot = windowSlotElems(a);
  for (int j = 0; j < a.nranks; ++j) {
    if (j != skip) w.put(BufRef::kInput, j * a.count + off, BufRef::kWindowIn, j * slot, m);
  }
}

}  // namespace

Schedule windowReduceScatter(const CollArgs& a) {
  Schedule s = windowSchedule(a);
  s.lendsInput = ownFromInput(a);
  WinSteps w(&s);
  const int me = a.rank;
  const uint64_t slot = windowSlotElems(a);
  for (uint64_t off = 0; off < a.count; off += slot) {
    const uint64_t m = std::min(slot, a.count - off);
    w.begin(true);
    putBlocks(w, a, off, m, ownFromInput(a) ? me : -1);
    w.signal(WinFlag::kReady);
    w.wait(-1, WinFlag::kReady);
    w.reducePeers(BufRef::kWindowIn, me * slot, BufRef::kOutput, off, m, me * a.count + off,
                  ownFromInput(a));
    w.signal(WinFlag::kFinished);
  }
  return s;
}

Schedule windowBroadcast(const CollArgs& a) {
  Schedule s = windowSchedule(a);
  const bool root = a.rank == a.root;
  s.lendsInput = root;
  WinSteps w(&s);
  for (uint64_t off = 0; off < a.count; off += roundElems(a)) {
    const uint64_t m = std::min(roundElems(a), a.count - off);
    w.begin(root);
    if (root) {
      w.put(BufRef::kInput, off, BufRef::kWindowIn, 0, m);
      w.signal(WinFlag::kReady);
      // The root's own copy while peers copy this round, not before they can start.
      if (!a.inPlace) w.copy(BufRef::kInput, off, BufRef::kOutput, off, m);
      continue;
    }
    w.signal(WinFlag::kReady);  // this rank has finished reading the rounds before
    w.wait(a.root, WinFlag::kReady);
    w.copyPeer(a.root, BufRef::kWindowIn, 0, BufRef::kOutput, off, m, off);
    w.signal(WinFlag::kFinished);
  }
  return s;
}

Schedule windowAllToAll(const CollArgs& a) {
  Schedule s = windowSchedule(a);
  // In place, this rank's output would overwrite blocks peers are reading.
  s.lendsInput = !a.inPlace;
  WinSteps w(&s);
  const int n = a.nranks, me = a.rank;
  const uint64_t slot = windowSlotElems(a);
  for (uint64_t off = 0; off < a.count; off += slot) {
    const uint64_t m = std::min(slot, a.count - off);
    w.begin(true);
    // This rank's own block goes from its input to its output (in place it is there).
    putBlocks(w, a, off, m, me);
    w.signal(WinFlag::kReady);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      w.wait(q, WinFlag::kReady);
      w.copyPeer(q, BufRef::kWindowIn, me * slot, BufRef::kOutput, q * a.count + off, m,
                 me * a.count + off);
    }
    // Own block last: in place, the output overwrites input only this rank reads.
    if (!a.inPlace)
      w.copy(BufRef::kInput, me * a.count + off, BufRef::kOutput, me * a.count + off, m);
    w.signal(WinFlag::kFinished);
  }
  return s;
}

// Reduce, gather and scatter lend nothing: no rank reads another's buffer, so no round
// signals kFinished. Reduce runs on the host and device windows, gather and scatter on
// the device windows.
Schedule windowReduce(const CollArgs& a) {
  Schedule s = windowSchedule(a);
  WinSteps w(&s);
  const bool root = a.rank == a.root;
  for (uint64_t off = 0; off < a.count; off += roundElems(a)) {
    const uint64_t m = std::min(roundElems(a), a.count - off);
    w.begin(true);
    if (!root || !ownFromInput(a)) w.put(BufRef::kInput, off, BufRef::kWindowIn, 0, m);
    w.signal(WinFlag::kReady);
    if (!root) continue;
    w.wait(-1, WinFlag::kReady);
    w.reducePeers(BufRef::kWindowIn, 0, BufRef::kOutput, off, m, off, ownFromInput(a));
  }
  return s;
}

Schedule windowGather(const CollArgs& a) {
  Schedule s = windowSchedule(a);
  WinSteps w(&s);
  const int n = a.nranks, me = a.rank;
  for (uint64_t off = 0; off < a.count; off += roundElems(a)) {
    const uint64_t m = std::min(roundElems(a), a.count - off);
    w.begin(me != a.root);
    if (me != a.root) {
      w.put(BufRef::kInput, off, BufRef::kWindowIn, 0, m);
      w.signal(WinFlag::kReady);
      continue;
    }
    w.signal(WinFlag::kReady);  // the root has finished reading the rounds before
    if (!a.inPlace) w.copy(BufRef::kInput, off, BufRef::kOutput, me * a.count + off, m);
    for (int i = 1; i < n; ++i) {
      const int q = (me + i) % n;
      w.wait(q, WinFlag::kReady);
      w.copyPeer(q, BufRef::kWindowIn, 0, BufRef::kOutput, q * a.count + off, m, off);
    }
  }
  return s;
}

Schedule windowScatter(const CollArgs& a) {
  Schedule s = windowSchedule(a);
  WinSteps w(&s);
  const int me = a.rank;
  const uint64_t slot = windowSlotElems(a);
  for (uint64_t off = 0; off < a.count; off += slot) {
    const uint64_t m = std::min(slot, a.count - off);
    w.begin(me == a.root);
    if (me == a.root) {
      putBlocks(w, a, off, m, me);
      w.signal(WinFlag::kReady);
      if (!a.inPlace) w.copy(BufRef::kInput, me * a.count + off, BufRef::kOutput, off, m);
      continue;
    }
    w.signal(WinFlag::kReady);  // this rank has finished reading the rounds before
    w.wait(a.root, WinFlag::kReady);
    w.copyPeer(a.root, BufRef::kWindowIn, me * slot, BufRef::kOutput, off, m, me * a.count + off);
  }
  return s;
}

}  // namespace braid::algo
