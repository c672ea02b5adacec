// Linear gather and scatter (linear.h). The root talks to every other rank p
// in one batch, each exchange cut into pieces of at most maxStepElems: the
// root's pieces for different peers progress concurrently, those for one peer
// in order. Block p (c elements at p*c) of the root's n*c buffer belongs to
// rank p. In place the root's own block is already where it belongs (gather:
// input == output + root*c; scatter: output == input + root*c), so it is not
// copied. Non-root ranks touch only their own c-element buffer: the input for
// gather, the output for scatter.
#include "algorithms/linear/linear.h"

#include <algorithm>

namespace braid::algo {
namespace {

Schedule emptySchedule(const CollArgs& a) {
  Schedule s;
  s.rank = a.rank;
  s.nranks = a.nranks;
  s.count = a.count;
  return s;
}

// Appends `count` elements from (or to) `buf` at `off` as pieces of at most
// maxStep elements, exchanged with `peer`; each piece joins the open batch.
void pieces(const CollArgs& a, Schedule* s, OpKind op, int peer, BufRef buf, uint64_t off,
            uint64_t count, bool batch) {
  const uint64_t maxStep = std::max<uint64_t>(1, a.maxStepElems);
  for (uint64_t done = 0; done < count; done += maxStep) {
    Step st{op};
    st.count = std::min(maxStep, count - done);
    if (op == OpKind::kSend) {
      st.src = buf;
      st.srcOffset = off + done;
      st.sendPeer = peer;
    } else {
      st.dst = buf;
      st.dstOffset = off + done;
      st.recvPeer = peer;
    }
    st.batchWithNext = batch;
    s->steps.push_back(st);
  }
}

// The root's side: its own block copied (unless in place), then one batch
// with every other rank. `block` is the root's n*c buffer, `own` its c one.
void rootSide(const CollArgs& a, Schedule* s, OpKind op, BufRef block, BufRef own) {
  const uint64_t c = a.count;
  const uint64_t mine = static_cast<uint64_t>(a.root) * c;
  if (!a.inPlace) {
    const bool gather = op == OpKind::kRecv;
    s->steps.push_back({OpKind::kCopy, gather ? own : block, gather ? block : own, -1, -1,
                        gather ? 0 : mine, gather ? mine : 0, c});
  }
  const size_t mark = s->steps.size();
  for (int p = 0; p < a.nranks; ++p) {
    if (p != a.root) pieces(a, s, op, p, block, static_cast<uint64_t>(p) * c, c, true);
  }
  if (s->steps.size() > mark) s->steps.back().batchWithNext = false;
}

}  // namespace

Schedule linearGather(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  if (a.rank == a.root) {
    rootSide(a, &s, OpKind::kRecv, BufRef::kOutput, BufRef::kInput);
  } else {
    pieces(a, &s, OpKind::kSend, a.root, BufRef::kInput, 0, a.count, false);
  }
  return s;
}

Schedule linearScatter(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  if (a.rank == a.root) {
    rootSide(a, &s, OpKind::kSend, BufRef::kInput, BufRef::kOutput);
  } else {
    pieces(a, &s, OpKind::kRecv, a.root, BufRef::kOutput, 0, a.count, false);
  }
  return s;
}

}  // namespace braid::algo
