// Alpha-beta cost model: predicted time of (algorithm, collective, bytes) on a
// communicator's shape and links, from each algorithm's closed form.
//
// A prediction is  base + steps x alpha + traffic x bytes / bandwidth,  where
// `steps` and `traffic` (bytes on a rank's busiest link, as a multiple of S)
// come from the algorithm's closed form and alpha / bandwidth from the link
// costs that costInputsFor() derives from a Topology and the constants table in
// cost_model.cc (each constant names its source). The model ignores protocols,
// channels and contention beyond the per-algorithm efficiency in that table.
//
// Multi-node: flat algorithms (every algorithm here; hierarchical ones are a
// later change) are priced on the bottleneck link: when nodes > 1 every step
// costs the slower alpha and every byte moves at the smaller bandwidth, since a
// ring or a tree pipelines at its slowest edge and a step-synchronous algorithm
// waits for its slowest pair.
//
// Pure functions on values; thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "topo/topology.h"

namespace braid {

// One kind of link as the model sees it.
struct LinkCost {
  double alphaUs = 0;  // latency of one step (a minimal message) over this link
  double gbps = 0;     // achievable GB/s (1e9 bytes/s) per direction for one rank
};

struct CostInputs {
  int nranks = 1;
  int nodes = 1;
  int ranksPerNode = 1;
  LinkCost intra;  // between ranks of one node
  LinkCost inter;  // between nodes, one rank's share of its node's NICs
  // Fixed cost of one call, whatever the algorithm: a kernel launch and its
  // protocol set-up on a GPU (NCCL's "base latency"); ~0 for host ranks.
  double baseUs = 0;
};

// Link costs for `nranks` ranks, `ranksPerNode` to a node, on `topo`. Nodes are
// assumed alike: topo.nodes[0] describes each (a one-node file prices a
// cluster of such nodes). Intra: NVLink when the node's GPUs have it, else
// PCIe between GPUs, else host shared memory (no GPUs: CPU ranks). Inter: the
// node's NICs shared among its ranks; TCP figures when no NIC reports a speed.
CostInputs costInputsFor(const topo::Topology& topo, int nranks, int ranksPerNode);

// Predicted microseconds for one call. `bytes` is S as the perf tools' size
// column: the buffer for all-reduce, broadcast and reduce; the whole array
// (n blocks) for all-gather, reduce-scatter, all-to-all(v), gather and scatter.
// +infinity when `a` does not implement `c` (algo::supports).
double predictUs(algo::Algorithm a, algo::Collective c, uint64_t bytes, const CostInputs& in);

// Every algorithm implementing `c`, with its prediction, fastest first (ties
// keep the registry's order).
std::vector<std::pair<algo::Algorithm, double>> rankAlgorithms(algo::Collective c, uint64_t bytes,
                                                               const CostInputs& in);

}  // namespace braid
