// Topology: what Braid knows about the machines of a job, as plain data.
//
// One Node per host (grouped by host identity, see discover.h); inside a node,
// the CPU side (packages, NUMA nodes, cores, caches) and the PCI devices Braid
// can move data through (GPUs, NICs). Filled by discoverLocal() (hwloc) or
// read from XML (xml.h); consumed by the cost model and the selector. Value
// type: copy freely; not synchronised.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::topo {

// The kind of hop between two endpoints, fastest first. Paths between ranks are
// priced by their slowest hop, so the order matters only for readability.
enum class LinkType {
  kLocal,            // same device: a copy in its own memory
  kNvlink,           // GPU to GPU over NVLink (directly or through NVSwitch)
  kNvlinkViaGpu,     // NVLink to a GPU that forwards over NVLink
  kPcieSameSwitch,   // peer-to-peer below one PCIe switch
  kPcieCrossSwitch,  // PCIe through the host bridge between two switches
  kHostBridge,       // device to host memory through the root complex
  kCrossSocket,      // between packages (UPI / Infinity Fabric / xGMI)
  kNetwork,          // between nodes through NICs
};

// "nvlink", "pcie_same_switch", ...: the names used in XML and logs.
const char* linkTypeName(LinkType type);
// The inverse of linkTypeName; false when `name` is not one of them.
bool parseLinkType(const std::string& name, LinkType* type);

struct Link {
  LinkType type = LinkType::kLocal;
  double bandwidthGBps = 0;  // GB/s (1e9 bytes/s) in one direction
  double latencyUs = 0;      // microseconds for a minimal message
};

// A PCI bus id as Braid writes it: "dddd:bb:dd.f", lower case, from NVML's
// "00000000:1B:00.0" or CUDA's "0000:1B:00.0"; unchanged when it does not parse.
std::string normalizeBusId(const std::string& busId);

// Usable PCIe bandwidth per direction in GB/s for a generation (1..6) and lane
// count, after line encoding (8b/10b up to Gen2, 128b/130b from Gen3); 0 when
// either is unknown. Gen5 x16: 63.0 GB/s.
double pcieGBps(int generation, int width);

struct Package {
  int id = 0;             // hwloc logical index
  int cores = 0;          // physical cores
  uint64_t l1dBytes = 0;  // one core's L1 data cache; 0 when unknown
  uint64_t l2Bytes = 0;   // one core's (or core pair's) L2; 0 when unknown
  uint64_t l3Bytes = 0;   // all L3 in the package added up; 0 when none
};

struct NumaNode {
  int id = 0;                // OS index, as numactl shows it
  int package = -1;          // Package::id holding it; -1 when it spans packages
  uint64_t memoryBytes = 0;  // local memory in bytes
};

struct Gpu {
  std::string name;         // "NVIDIA H100 80GB HBM3", or the OS device name
  std::string busId;        // PCI "dddd:bb:dd.f", lower case; matches CUDA's
  int pcieGen = 0;          // PCIe generation of its link; 0 when unknown
  int pcieWidth = 0;        // lanes; 0 when unknown
  double pcieGBps = 0;      // GB/s per direction to its switch or host bridge
  double nvlinkGBps = 0;    // GB/s per direction over all its NVLinks; 0: none
  int pcieSwitch = -1;      // id of the PCIe switch above it; -1: on the host bridge
  int numa = -1;            // NumaNode::id closest to it; -1 when unknown
};

enum class NicKind { kEthernet, kInfiniband };
const char* nicKindName(NicKind kind);  // "ethernet", "infiniband"

struct Nic {
  std::string name;     // "eth0", "mlx5_0"
  NicKind kind = NicKind::kEthernet;
  double speedGbps = 0;  // link speed in Gb/s (bits); 0 when the OS does not say
  std::string busId;     // PCI bus id; "" for virtual NICs without one
  int pcieSwitch = -1;   // as Gpu::pcieSwitch
  int numa = -1;         // NumaNode::id closest to it; -1 when unknown
};

// NVLinks from one GPU of a node to a peer: another GPU (direct links) or the
// NVSwitch fabric, which reaches every GPU that has links to it. A GPU with
// nvlinkGBps > 0 and no Nvlink entry is taken to be on NVSwitch (files that
// give only the per-GPU figure).
constexpr char kNvswitch[] = "nvswitch";
struct Nvlink {
  std::string gpu;   // bus id of the GPU the links leave
  std::string peer;  // bus id of the GPU they reach, or kNvswitch
  int links = 0;     // how many links
  double gbps = 0;   // GB/s per direction over all of them
};

struct Node {
  std::string id;    // host identity: host name + boot id, or BRAID_HOST_ID
  std::string name;  // host name, for messages
  int pus = 0;       // hardware threads (logical CPUs) Braid may run on
  // Why this node's shape was not discovered ("hwloc not compiled in", ...);
  // empty when it was. A fallback node is 1 package, 1 NUMA node, sysconf CPUs.
  std::string fallback;
  std::vector<Package> packages;
  std::vector<NumaNode> numaNodes;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  std::vector<Nvlink> nvlinks;  // one entry per (GPU, peer) with active links

  int cores() const;  // physical cores over all packages
  int gpuIndex(const std::string& busId) const;  // -1 when no GPU has that bus id
};

// Where one rank runs.
struct RankPlace {
  int node = 0;   // index into Topology::nodes
  int gpu = -1;   // index into that node's gpus; -1: a host (CPU) rank
  int numa = -1;  // NumaNode::id it runs on; -1 when unknown
};

struct Topology {
  std::vector<Node> nodes;
  // Where a communicator's ranks ran, by rank: filled in the topology a live
  // communicator writes (BRAID_TOPO_DUMP_FILE), empty in a machine description.
  std::vector<RankPlace> ranks;
};

}  // namespace braid::topo
