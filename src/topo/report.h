// Topology as text for people: where each rank runs, the path matrix between
// ranks, and each GPU's PCIe paths to the NICs of its node. braid-topo prints
// these, and a live communicator logs them at INFO (topo/view.h). Pure
// functions on values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "topo/paths.h"
#include "topo/topology.h"

namespace braid::topo {

// "NVL", "PIX", ...: nvidia-smi topo's names for the path types (LOC for local).
const char* shortLinkName(LinkType type);

// One line per rank: its node, GPU (bus id, name, switch, NUMA node) or NUMA
// node, and the NIC it sends through with the path to it.
std::vector<std::string> rankLines(const Topology& topo, const std::vector<RankPlace>& places);

// A legend, a header and one row per rank: "type/GB/s" per pair (bottleneck
// bandwidth per direction). Empty beyond `maxRanks` ranks (too wide to read).
std::vector<std::string> pathMatrixLines(const Topology& topo, const std::vector<RankPlace>& places,
                                         int maxRanks = 64);

// For each GPU of `node`, its path to every NIC ("mlx5_0 PIX 400 Gb/s"), the
// nearest marked with '*'. Empty when the node has no GPU or no NIC.
std::vector<std::string> gpuNicLines(const Node& node);

}  // namespace braid::topo
