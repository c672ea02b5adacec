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

#include "algorithms/builder.h"

namespace braid::algo {
namespace {

// The root's side: its own block copied (unless in place), then one batch
// with every other rank. `block` is the root's n*c buffer, `own` its c one.
void rootSide(const CollArgs& a, Schedule* s, OpKind op, BufRef block, BufRef own) {
  const uint64_t c = a.count;
  const uint64_t mine = static_cast<uint64_t>(a.root) * c;
  const bool gather = op == OpKind::kRecv;
  Builder b(s, a);
  if (!a.inPlace) {
    b.copy(gather ? own : block, gather ? 0 : mine, gather ? block : own, gather ? mine : 0, c);
  }
  b.open();
  for (int p = 0; p < a.nranks; ++p) {
    if (p == a.root) continue;
    if (gather) {
      b.recv(p, block, static_cast<uint64_t>(p) * c, c);
    } else {
      b.send(p, block, static_cast<uint64_t>(p) * c, c);
    }
  }
  b.close();
}

}  // namespace

Schedule linearGather(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  if (a.rank == a.root) {
    rootSide(a, &s, OpKind::kRecv, BufRef::kOutput, BufRef::kInput);
  } else {
    Builder(&s, a).send(a.root, BufRef::kInput, 0, a.count);
  }
  return s;
}

Schedule linearScatter(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  if (a.rank == a.root) {
    rootSide(a, &s, OpKind::kSend, BufRef::kInput, BufRef::kOutput);
  } else {
    Builder(&s, a).recv(a.root, BufRef::kOutput, 0, a.count);
  }
  return s;
}

}  // namespace braid::algo
