// One communicator's Topology, merged from what each rank saw.
//
// At init every rank offers its node's description (this process's discovery
// as XML, made once per process) and where it runs; bootstrap delivers each
// node's description once (core/transport.h, PeerInfo). mergeViews() turns
// those into one Topology, the same on every rank, with the nodes in the
// order of their lowest rank, plus every rank's place. With BRAID_TOPO_FILE
// set, every rank loads that file instead and no description travels.
// Thread-safe: the per-process discovery is made under a once-flag.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "topo/paths.h"
#include "topo/topology.h"

namespace braid::topo {

// What this process offers at init: its node as XML ("" when BRAID_TOPO_FILE
// is set, or discovery failed: merging then uses the file, or a fallback), and
// its place: "numa=N" of the CPU it runs on now, and "gpu=<bus id>" when the
// engine knows the GPU this rank uses (cuda::boundDeviceBusId(): the device
// current at init), matched against the node's GPUs when the views merge.
std::string localNodeBlob();
std::string localPlace(const std::string& gpuBusId = "");

// The name of the NIC this process should send through from `place` (a
// localPlace() string): nearestNic on this node as discovered; "" when
// discovery failed, BRAID_TOPO_FILE is set (a file need not describe this
// machine), or the node has no NIC. The network transports prefer it
// (BRAID_IB_HCA overrides).
std::string localNearestNic(const std::string& place);

struct RankView {
  int node = 0;          // node index of the rank (Comm::nodeOf)
  std::string hostId;    // PeerInfo::hostId
  std::string hostName;  // PeerInfo::hostName
  std::string place;     // PeerInfo::place
  std::string nodeBlob;  // PeerInfo::nodeBlob (on a node's lowest rank only)
};

struct MergedTopology {
  Topology topology;
  std::vector<RankPlace> places;  // by rank
};

// One Topology from every rank's view; a node whose description is missing
// or unreadable becomes a fallback node saying why (logged at WARN). With
// BRAID_TOPO_FILE set, its nodes are used in order (node i of the job is node
// i of the file, or its last node: a one-node file describes every node).
// Rank 0 writes the result, with every rank's place, to BRAID_TOPO_DUMP_FILE
// when that is set (braid-topo shows such a file's ranks), and, when a rank
// runs on a GPU, logs the ranks' GPUs, NICs and path matrix at INFO.
Expected<MergedTopology> mergeViews(const std::vector<RankView>& ranks, int myRank);

}  // namespace braid::topo
