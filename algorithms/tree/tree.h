// Pipelined double binary tree (as NCCL's): two complementary binary trees over
// the ranks, each carrying half of the data, so every rank is a leaf in one of
// them and the latency is O(log n). Pure rank arithmetic.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

// The parent and children of `rank` in tree 0 or 1 of a double binary tree
// rooted at rank 0 (-1 when absent); exposed for tests.
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
