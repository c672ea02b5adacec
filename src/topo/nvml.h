// NVLink discovery through NVML, the driver's management library, opened at run
// time (dlopen of BRAID_NVML_LIBRARY, else "libnvidia-ml.so.1"): Braid has no
// link-time dependency on it, and where it is missing (no NVIDIA driver, a CPU
// machine) discovery simply has no NVLink information.
//
// What NVML reports per GPU: its PCI bus id and name, and per active NVLink the
// far end (another GPU by bus id, or an NVSwitch) and the link's version, from
// which the per-link rate follows (nvml.cc's table names the sources). Links to
// the same peer are added up. Thread-safe (no shared state); each readNvml()
// opens, reads and closes the library.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace braid::topo {

struct NvmlGpu {
  std::string busId;  // "0000:1b:00.0", as Gpu::busId
  std::string name;   // "NVIDIA H100 80GB HBM3"
  int pcieGen = 0;    // the GPU's maximum PCIe link; 0 when NVML does not say
  int pcieWidth = 0;
};

struct NvmlReport {
  std::string library;  // what was opened
  std::string missing;  // why NVML gave nothing ("" when it answered)
  std::vector<NvmlGpu> gpus;
  std::vector<Nvlink> nvlinks;  // per (GPU, peer), peers being GPUs above or kNvswitch
};

// BRAID_NVML_LIBRARY when set, else "libnvidia-ml.so.1".
std::string nvmlLibrary();

// Everything NVML says about this machine's GPUs and their NVLinks; `missing`
// set (and nothing else) when the library cannot be opened, lacks a function
// Braid needs, or fails to initialise (no driver).
NvmlReport readNvml(const std::string& library);

// GB/s per direction of one NVLink of NVML's version `version` (its
// nvmlNvlinkVersion_t values, which agree with the plain 1..4 some drivers
// return on every rate); 0 for an unknown one.
double nvlinkGBpsPerLink(unsigned version);

// Merges NVML's answer into a discovered node: a GPU NVML lists that the node
// lacks (no hwloc, or hwloc without its PCI devices) is added with NVML's name
// and PCIe link and sysfs's NUMA node; NVML's NVLinks replace the node's, and
// each GPU's nvlinkGBps becomes the sum of its links.
void applyNvml(const NvmlReport& report, Node* node);

}  // namespace braid::topo
