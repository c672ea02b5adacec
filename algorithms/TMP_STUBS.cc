// TEMPORARY (worktree only): stand-ins until the families land. Never merge.
#include "algorithms/halving_doubling/halving_doubling.h"
#include "algorithms/linear/linear.h"
#include "algorithms/pairwise/pairwise.h"
#include "algorithms/ring/ring.h"
#include "algorithms/tree/tree.h"
namespace braid::algo {
Schedule ringAllGather(const CollArgs&) { return {}; }
Schedule ringReduceScatter(const CollArgs&) { return {}; }
Schedule ringBroadcast(const CollArgs&) { return {}; }
Schedule ringReduce(const CollArgs&) { return {}; }
Schedule treeAllReduce(const CollArgs& a) { return ringAllReduce(a); }
Schedule treeBroadcast(const CollArgs&) { return {}; }
Schedule treeReduce(const CollArgs&) { return {}; }
Schedule halvingDoublingAllReduce(const CollArgs& a) { return ringAllReduce(a); }
Schedule halvingDoublingReduceScatter(const CollArgs&) { return {}; }
Schedule halvingDoublingAllGather(const CollArgs&) { return {}; }
Schedule pairwiseAllToAll(const CollArgs&) { return {}; }
Schedule pairwiseAllToAllv(const CollArgs&) { return {}; }
Schedule bruckAllToAll(const CollArgs&) { return {}; }
Schedule bruckAllGather(const CollArgs&) { return {}; }
Schedule linearGather(const CollArgs&) { return {}; }
Schedule linearScatter(const CollArgs&) { return {}; }
}
