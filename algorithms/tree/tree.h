// Pipelined double binary tree (as NCCL's): two complementary binary trees over
// the ranks, each carrying half of the data, so every rank but the root is a
// leaf in at least one of them and the latency is O(log n). Pure rank
// arithmetic; tree.cc's header explains the trees and the pipelining.
//
// All-reduce needs FIFOs of two messages per direction (as the ring does);
// broadcast and reduce manage with one. Reduce asks for scratch of one piece
// (Schedule::scratchElems) on non-root ranks with two children.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

// The parent and children of `rank` in tree 0 or 1 of a double binary tree
// over `nranks` ranks (-1 when absent, or for a rank out of range). Both trees
// are rooted at rank 0, which has one child (child0) in each; their depth is at
// most ceil(log2 nranks). Exposed for tests.
struct TreeLinks {
  int parent = -1;
  int child0 = -1;
  int child1 = -1;
};
TreeLinks doubleBinaryTree(int rank, int nranks, int tree);

Schedule treeAllReduce(const CollArgs& args);  // reduce up both trees, broadcast down
Schedule treeBroadcast(const CollArgs& args);  // from args.root
Schedule treeReduce(const CollArgs& args);     // to args.root

}  // namespace braid::algo
