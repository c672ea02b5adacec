// Hierarchical algorithms for communicators that span several nodes: pure
// rank arithmetic over CollArgs::nodeOf, no transports.
//
// Nodes are numbered in the order of their lowest rank; a node's members are
// its ranks in ascending order, and a rank's local index is its position there
// (ranks of a node need not be contiguous). With N nodes of L ranks each, the
// rail of local index i is the N ranks of local index i, one per node, in node
// order. Network traffic only flows along rails.
//
// All-reduce (N nodes of equal size L). The buffer runs in rounds of at most
// L*N*maxStepElems elements; a round is split into L near-equal chunks, chunk i
// into N near-equal sub-chunks (i, j), each <= maxStepElems. Then
//   1. intra-node reduce-scatter, one ring per j: local rank i ends with the
//      node's sum of sub-chunks (i, 0..N-1), in its output;
//   2. ring all-reduce along rail i of chunk i (its N sub-chunks): node q's
//      rank computes the final value of sub-chunk (i, q) once, then passes it on;
//   3. intra-node all-gather, one ring per j.
// Each rank sends 2*(count/L)*(N-1)/N elements over the network, and each final
// value is computed once and copied, so all ranks agree bitwise (avg divides
// once). N == 1 is ring all-reduce; L == 1 is ring all-reduce across nodes.
//
// All-gather: per piece of <= maxStepElems, a ring all-gather along the rail
// (each rank gets the blocks of its rail: (N-1)*count over the network), then
// per node q a ring all-gather inside the node of node q's blocks.
// Reduce-scatter mirrors it: per piece, for each node q an intra-node ring
// reduce-scatter of node q's blocks leaves the node's partial sum of block
// nodes[q][i] in local rank i's scratch slot q (N*piece scratch elements),
// then a ring reduce-scatter along the rail finishes each rank's own block.
//
// Nodes of unequal size (or a nodeOf whose size is not nranks, taken as one
// node): all-reduce, all-gather and reduce-scatter fall back to one ring over
// all ranks ordered node by node (node 0's members, then node 1's, ...), so
// the ring crosses the network once per node boundary. Correct for any nodeOf;
// the traffic per rank is a flat ring's.
//
// Broadcast (any node sizes): a pipelined chain over the node heads (the root
// for its node, the lowest rank for the others) starting at the root, then in
// every node a chain from its head through its other members. Every piece of
// <= maxStepElems crosses the network once per node; chains have no cycle, so
// FIFOs of one message suffice.
//
// Rings need FIFOs of two messages, as ringAllReduce. In place follows NCCL's
// layouts (CollArgs); no input element is read after its aliasing output
// element is written.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

Schedule hierarchicalAllReduce(const CollArgs& args);
Schedule hierarchicalAllGather(const CollArgs& args);
Schedule hierarchicalReduceScatter(const CollArgs& args);
Schedule hierarchicalBroadcast(const CollArgs& args);

}  // namespace braid::algo
