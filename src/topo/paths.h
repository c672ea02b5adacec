// Paths between ranks: where each rank sits in a Topology, and the typed link
// between every pair of ranks with its bottleneck bandwidth and latency.
//
// A path's type is its slowest hop (LinkType's order): two GPUs on NVLink are
// `nvlink` even if their PCIe sits on different sockets; two GPUs without
// NVLink under one PCIe switch are `pcie_same_switch`, under different
// switches of one socket `pcie_cross_switch`, with either on the host bridge
// `host_bridge`, on different sockets `cross_socket`. Host ranks (no GPU) on
// one NUMA node (or where it is unknown) are `local`: shared memory; on NUMA
// nodes of different packages, `cross_socket`. Ranks on different nodes are
// `network`, at the speed of the slower end's NIC (the one nearest the rank:
// same PCIe switch as its GPU, else same NUMA node, else the fastest).
//
// Bandwidths and latencies are the hardware's nominal figures (the table in
// paths.cc names each source); the cost model derates them. `nvlink_via_gpu`
// is never produced: the XML format does not describe NVLink peer maps, so a
// GPU with NVLink is taken to reach every other NVLink GPU of its node through
// NVSwitch. Pure functions on values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace braid::topo {

// Where one rank runs.
struct RankPlace {
  int node = 0;   // index into Topology::nodes
  int gpu = -1;   // index into that node's gpus; -1: a host (CPU) rank
  int numa = -1;  // NumaNode::id it runs on; -1 when unknown
};

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

// The NIC index of `place`'s node a rank at `place` sends through (see the
// header); -1 when the node has none.
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
