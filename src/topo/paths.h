// Paths between ranks: where each rank sits in a Topology, and the typed link
// between every pair of ranks with its bottleneck bandwidth and latency.
//
// A path's type is its slowest hop (LinkType's order): two GPUs on NVLink are
// `nvlink` even if their PCIe sits on different sockets. NVLink is direct links
// between the two (Node::nvlinks), or NVSwitch when both are on it, at the
// slower GPU's rate; without either, two GPUs that both link to a third are
// `nvlink_via_gpu` (it forwards) at the slower of the two hops. Two GPUs without
// NVLink under one PCIe switch are `pcie_same_switch`, under different
// switches of one socket `pcie_cross_switch`, with either on the host bridge
// `host_bridge`, on different sockets `cross_socket`. Host ranks (no GPU) on
// one NUMA node (or where it is unknown) are `local`: shared memory; on NUMA
// nodes of different packages, `cross_socket`. Ranks on different nodes are
// `network`, at the speed of the slower end's NIC (nearestNic).
//
// Bandwidths and latencies are the hardware's nominal figures (the table in
// paths.cc names each source); the cost model derates them. Pure functions on
// values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace braid::topo {

// The typed path between two ranks. `local` for a rank with itself.
Link pathBetween(const Topology& topo, const RankPlace& a, const RankPlace& b);

// Every pair's path, row-major: at(a, b) is pathBetween(places[a], places[b]).
struct PathMatrix {
  int nranks = 0;
  std::vector<Link> links;
  const Link& at(int a, int b) const { return links[static_cast<size_t>(a) * nranks + b]; }
};
PathMatrix pathMatrix(const Topology& topo, const std::vector<RankPlace>& places);

// Node `index` of `topo`, clamped to its last node (a one-node file stands for
// every node); an empty node when `topo` has none.
const Node& nodeAt(const Topology& topo, int index);

// The PCIe path between a rank (its GPU, or without one its NUMA node) and a
// NIC of its node: `pcie_same_switch` under the GPU's switch, `pcie_cross_switch`
// under another switch of the same socket, `host_bridge` on the root complex,
// `cross_socket` on the other package's.
LinkType nicPath(const Node& node, const RankPlace& place, const Nic& nic);

// The NIC index of `place`'s node a rank at `place` sends through: one under
// its GPU's switch, else one reached through the root complex of its socket
// (pcie_cross_switch and host_bridge alike), else across sockets; within each,
// one on the rank's NUMA node, then the fastest. -1 when the node has none.
// BRAID_IB_HCA, where set, overrides it in the transports.
int nearestNic(const Node& node, const RankPlace& place);

// The default layout for tools and tests: rank r on node r / ranksPerNode
// (clamped to the last node of `topo`: a one-node file stands for a cluster of
// such nodes, and node indices beyond it reuse its last node); within a node,
// local rank i on GPU i (modulo the node's GPUs), or, without GPUs, spread over
// the NUMA nodes in blocks.
std::vector<RankPlace> blockPlaces(const Topology& topo, int nranks, int ranksPerNode);

// A rank's place as a short string for the bootstrap ("numa=0",
// "gpu=0000:1b:00.0,numa=0", "" when nothing is known), and back, resolved
// against the rank's node (an unknown bus id leaves gpu at -1).
std::string placeString(int numa, const std::string& gpuBusId);
RankPlace parsePlace(const std::string& text, const Node& node, int nodeIndex);

}  // namespace braid::topo
