#include "topo/discover.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>

#include "core/env.h"
#include "core/host.h"
#include "core/logging.h"
#include "topo/nvml.h"

#ifdef BRAID_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace braid::topo {

Node fallbackNode(const std::string& reason) {
  Node node;
  node.id = hostIdentity();
  node.name = hostName();
  node.fallback = reason;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  node.pus = cpus > 0 ? static_cast<int>(cpus) : 1;
  Package pkg;
  pkg.cores = node.pus;  // without hwloc, hardware threads cannot be told from cores
  node.packages.push_back(pkg);
  NumaNode numa;
  numa.package = 0;
  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0) numa.memoryBytes = static_cast<uint64_t>(pages) * pageSize;
  node.numaNodes.push_back(numa);
  return node;
}

namespace {

// NVML's GPUs and NVLinks into a discovered node; its absence is said once per
// process at INFO (a CPU machine has no NVML, and that is no problem).
void addNvml(Node* node) {
  const NvmlReport nvml = readNvml(nvmlLibrary());
  static std::once_flag said;
  std::call_once(said, [&] {
    if (!nvml.missing.empty()) {
      BRAID_INFO("topology: no NVLink information (%s)", nvml.missing.c_str());
    } else {
      BRAID_INFO("topology: NVML (%s) lists %zu GPU(s) and %zu NVLink peer(s)",
                 nvml.library.c_str(), nvml.gpus.size(), nvml.nvlinks.size());
    }
  });
  applyNvml(nvml, node);
}

}  // namespace

#ifdef BRAID_HAVE_HWLOC
namespace {

// hwloc gives no PCIe generation or lane count, only their product; Linux sysfs
// has both ("16.0 GT/s PCIe", "16"). Missing files leave them 0 (unknown).
void readPcieLink(const std::string& busId, int* gen, int* width) {
  std::string dir = "/sys/bus/pci/devices/" + busId + "/";
  double gtps = 0;
  std::ifstream(dir + "current_link_speed") >> gtps;
  std::ifstream(dir + "current_link_width") >> *width;
  static constexpr double kGTps[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int g = 0; g < 6; ++g) {
    if (std::fabs(gtps - kGTps[g]) < 0.1) *gen = g + 1;
  }
}

// Link speed in Gb/s from sysfs: ethernet "speed" is in Mb/s (-1 when down);
// InfiniBand port 1 "rate" reads "400 Gb/sec (4X NDR)".
double readNicGbps(const std::string& name, NicKind kind) {
  double v = 0;
  if (kind == NicKind::kInfiniband) {
    std::ifstream("/sys/class/infiniband/" + name + "/ports/1/rate") >> v;
    return v > 0 ? v : 0;
  }
  std::ifstream("/sys/class/net/" + name + "/speed") >> v;
  return v > 0 ? v / 1000.0 : 0;
}

std::string busIdOf(hwloc_obj_t pci) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

// The topmost PCI-to-PCI bridge above `pci` (the switch's upstream port), as
// its logical index; -1 when the device hangs off the host bridge directly.
int switchOf(hwloc_obj_t pci) {
  int id = -1;
  for (hwloc_obj_t p = pci->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
    if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) id = static_cast<int>(p->logical_index);
  }
  return id;
}

// The NUMA node nearest to an I/O object, when exactly one is.
int numaOf(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t cpuSide = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (!cpuSide || !cpuSide->nodeset || hwloc_bitmap_weight(cpuSide->nodeset) != 1) return -1;
  return hwloc_bitmap_first(cpuSide->nodeset);
}

uint64_t cacheBytes(hwloc_topology_t topo, hwloc_obj_t pkg, hwloc_obj_type_t type, bool sum) {
  uint64_t bytes = 0;
  int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, pkg->cpuset, type);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t c = hwloc_get_obj_inside_cpuset_by_type(topo, pkg->cpuset, type, i);
    if (!sum) return c->attr->cache.size;
    bytes += c->attr->cache.size;
  }
  return bytes;
}

void addCpuSide(hwloc_topology_t topo, Node* node) {
  node->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  int npkg = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  for (int i = 0; i < npkg; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, i);
    Package p;
    p.id = static_cast<int>(obj->logical_index);
    p.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, obj->cpuset, HWLOC_OBJ_CORE);
    p.l1dBytes = cacheBytes(topo, obj, HWLOC_OBJ_L1CACHE, false);
    p.l2Bytes = cacheBytes(topo, obj, HWLOC_OBJ_L2CACHE, false);
    p.l3Bytes = cacheBytes(topo, obj, HWLOC_OBJ_L3CACHE, true);
    node->packages.push_back(p);
  }
  int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnuma; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
    NumaNode n;
    n.id = static_cast<int>(obj->os_index);
    n.memoryBytes = obj->attr->numanode.local_memory;
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj);
    n.package = pkg ? static_cast<int>(pkg->logical_index) : (npkg == 1 ? 0 : -1);
    node->numaNodes.push_back(n);
  }
}

// NVIDIA and AMD only: a VM's emulated VGA (virtio, QEMU) is also a GPU OS
// device, but no collective can use it.
bool isComputeGpu(hwloc_obj_t pci) {
  return pci->attr->pcidev.vendor_id == 0x10de || pci->attr->pcidev.vendor_id == 0x1002;
}

void addGpu(hwloc_topology_t topo, hwloc_obj_t osdev, hwloc_obj_t pci, Node* node) {
  std::string busId = busIdOf(pci);
  for (const Gpu& g : node->gpus) {
    if (g.busId == busId) return;  // one GPU shows as several OS devices (card0, nvml0, cuda0)
  }
  Gpu g;
  const char* model = hwloc_obj_get_info_by_name(osdev, "GPUModel");
  g.name = model ? model : osdev->name;
  g.busId = busId;
  readPcieLink(busId, &g.pcieGen, &g.pcieWidth);
  g.pcieGBps = pci->attr->pcidev.linkspeed > 0 ? pci->attr->pcidev.linkspeed
                                                : pcieGBps(g.pcieGen, g.pcieWidth);
  g.pcieSwitch = switchOf(pci);
  g.numa = numaOf(topo, pci);
  node->gpus.push_back(g);
}

void addNic(hwloc_topology_t topo, hwloc_obj_t osdev, hwloc_obj_t pci, NicKind kind, Node* node) {
  std::string busId = pci ? busIdOf(pci) : "";
  for (Nic& n : node->nics) {
    // An InfiniBand HCA is both "ib0" (network) and "mlx5_0" (OpenFabrics): keep the latter.
    if (!busId.empty() && n.busId == busId) {
      if (kind == NicKind::kInfiniband) n = Nic{osdev->name, kind, readNicGbps(osdev->name, kind),
                                                busId, n.pcieSwitch, n.numa};
      return;
    }
  }
  Nic n{osdev->name, kind, readNicGbps(osdev->name, kind), busId, pci ? switchOf(pci) : -1,
        numaOf(topo, osdev)};
  node->nics.push_back(n);
}

void addDevices(hwloc_topology_t topo, Node* node) {
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
    hwloc_obj_t pci = os->parent && os->parent->type == HWLOC_OBJ_PCI_DEVICE ? os->parent : nullptr;
    switch (os->attr->osdev.type) {
      case HWLOC_OBJ_OSDEV_GPU:
      case HWLOC_OBJ_OSDEV_COPROC:
        if (pci && isComputeGpu(pci)) addGpu(topo, os, pci, node);
        break;
      case HWLOC_OBJ_OSDEV_NETWORK:
        addNic(topo, os, pci, NicKind::kEthernet, node);
        break;
      case HWLOC_OBJ_OSDEV_OPENFABRICS:
        addNic(topo, os, pci, NicKind::kInfiniband, node);
        break;
      default:
        break;
    }
  }
}

}  // namespace

Expected<Topology> discoverLocal() {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return systemError("hwloc_topology_init");
  // Keep only the PCI devices and bridges that lead to an OS device we can use.
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo) != 0) {
    int err = errno;
    hwloc_topology_destroy(topo);
    return systemError("hwloc_topology_load (set HWLOC_COMPONENTS or BRAID_TOPO_FILE)", err);
  }
  Node node;
  node.id = hostIdentity();
  node.name = hostName();
  addCpuSide(topo, &node);
  addDevices(topo, &node);
  hwloc_topology_destroy(topo);
  if (node.packages.empty() || node.cores() == 0 || node.pus == 0) {
    std::vector<Nic> nics = std::move(node.nics);
    std::vector<Gpu> gpus = std::move(node.gpus);
    node = fallbackNode("hwloc saw no package or core (a restricted container?)");
    node.nics = std::move(nics);
    node.gpus = std::move(gpus);
    BRAID_INFO("topology: %s; using a minimal topology of 1 package, %d CPUs",
               node.fallback.c_str(), node.pus);
  }
  addNvml(&node);
  Topology out;
  out.nodes.push_back(std::move(node));
  return out;
}

#else  // !BRAID_HAVE_HWLOC

Expected<Topology> discoverLocal() {
  Node node = fallbackNode("Braid was built without hwloc (install libhwloc-dev and rebuild)");
  BRAID_INFO("topology: %s; using a minimal topology of 1 package, %d CPUs",
             node.fallback.c_str(), node.pus);
  addNvml(&node);
  Topology out;
  out.nodes.push_back(std::move(node));
  return out;
}

#endif  // BRAID_HAVE_HWLOC

}  // namespace braid::topo
