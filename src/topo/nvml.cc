#include "topo/nvml.h"

#include <dlfcn.h>

#include <fstream>
#include <initializer_list>
#include <map>
#include <utility>

#include "core/env.h"
#include "topo/nvml_abi.h"

namespace braid::topo {
namespace {

using nvml::Device;
using nvml::PciInfo;
using nvml::Return;

// The functions readNvml calls; the optional ones may be null (older drivers).
struct Api {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn errorString = nullptr;
  nvml::GetCountFn count = nullptr;
  nvml::GetHandleByIndexFn handle = nullptr;
  nvml::GetPciInfoFn pci = nullptr;
  nvml::GetNameFn name = nullptr;
  nvml::GetLinkStateFn linkState = nullptr;
  nvml::GetLinkVersionFn linkVersion = nullptr;
  nvml::GetLinkRemotePciFn linkRemotePci = nullptr;
  nvml::GetLinkRemoteTypeFn linkRemoteType = nullptr;  // optional
  nvml::GetUnsignedFn pcieGen = nullptr;               // optional
  nvml::GetUnsignedFn pcieWidth = nullptr;             // optional

  std::string error(Return r) const {
    const char* text = errorString != nullptr ? errorString(r) : nullptr;
    return text != nullptr ? text : "NVML error " + std::to_string(r);
  }
};

// The first of `names` the library exports (versioned names first).
template <typename Fn>
Fn symbol(void* lib, std::initializer_list<const char*> names, std::string* missing = nullptr) {
  for (const char* n : names) {
    if (void* p = dlsym(lib, n)) return reinterpret_cast<Fn>(p);
  }
  if (missing != nullptr && missing->empty()) *missing = *names.begin();
  return nullptr;
}

// Required functions: their absence (a library too old, or not NVML) leaves the
// name of the first one missing in *missing.
void load(void* lib, Api* api, std::string* missing) {
  api->init = symbol<nvml::InitFn>(lib, {"nvmlInit_v2", "nvmlInit"}, missing);
  api->shutdown = symbol<nvml::ShutdownFn>(lib, {"nvmlShutdown"}, missing);
  api->errorString = symbol<nvml::ErrorStringFn>(lib, {"nvmlErrorString"}, missing);
  api->count =
      symbol<nvml::GetCountFn>(lib, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, missing);
  api->handle = symbol<nvml::GetHandleByIndexFn>(
      lib, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, missing);
  api->pci = symbol<nvml::GetPciInfoFn>(lib, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"},
                                        missing);
  api->name = symbol<nvml::GetNameFn>(lib, {"nvmlDeviceGetName"}, missing);
  api->linkState = symbol<nvml::GetLinkStateFn>(lib, {"nvmlDeviceGetNvLinkState"}, missing);
  api->linkVersion = symbol<nvml::GetLinkVersionFn>(lib, {"nvmlDeviceGetNvLinkVersion"}, missing);
  api->linkRemotePci = symbol<nvml::GetLinkRemotePciFn>(
      lib, {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"}, missing);
  api->linkRemoteType =
      symbol<nvml::GetLinkRemoteTypeFn>(lib, {"nvmlDeviceGetNvLinkRemoteDeviceType"});
  api->pcieGen = symbol<nvml::GetUnsignedFn>(lib, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  api->pcieWidth = symbol<nvml::GetUnsignedFn>(lib, {"nvmlDeviceGetMaxPcieLinkWidth"});
}

std::string busIdOf(const PciInfo& pci) {
  char buf[sizeof(pci.busId) + 1] = {};
  for (size_t i = 0; i < sizeof(pci.busId) && pci.busId[i] != '\0'; ++i) buf[i] = pci.busId[i];
  return normalizeBusId(buf);
}

// The far end of `link` of `dev`: a GPU's bus id, kNvswitch, or "" (inactive,
// absent, or a CPU's NVLink). *version gets the link's NVML version.
std::string peerOf(const Api& api, Device dev, unsigned link, const std::vector<NvmlGpu>& gpus,
                   unsigned* version) {
  unsigned state = 0;
  if (api.linkState(dev, link, &state) != nvml::kSuccess || state != nvml::kFeatureEnabled) {
    return "";
  }
  PciInfo remote{};
  if (api.linkRemotePci(dev, link, &remote) != nvml::kSuccess) return "";
  if (api.linkVersion(dev, link, version) != nvml::kSuccess) *version = 0;
  const std::string bus = busIdOf(remote);
  unsigned type = nvml::kLinkToGpu;
  const bool typed =
      api.linkRemoteType != nullptr && api.linkRemoteType(dev, link, &type) == nvml::kSuccess;
  for (const NvmlGpu& g : gpus) {
    if (g.busId == bus) return bus;
  }
  // Not one of the GPUs: an NVSwitch, unless NVML says it is something else.
  if (!typed || type == nvml::kLinkToSwitch) return kNvswitch;
  return "";
}

// Every active link of `gpu`, added up per peer.
void readLinks(const Api& api, Device dev, const NvmlGpu& gpu, const std::vector<NvmlGpu>& gpus,
               std::vector<Nvlink>* out) {
  std::map<std::string, Nvlink> byPeer;
  for (unsigned link = 0; link < nvml::kMaxLinks; ++link) {
    unsigned version = 0;
    const std::string peer = peerOf(api, dev, link, gpus, &version);
    if (peer.empty()) continue;
    Nvlink& l = byPeer[peer];
    l.gpu = gpu.busId;
    l.peer = peer;
    l.links += 1;
    l.gbps += nvlinkGBpsPerLink(version);
  }
  for (auto& [peer, l] : byPeer) out->push_back(std::move(l));
}

void readDevices(const Api& api, NvmlReport* report) {
  unsigned count = 0;
  if (Return r = api.count(&count); r != nvml::kSuccess) {
    report->missing = "nvmlDeviceGetCount: " + api.error(r);
    return;
  }
  std::vector<Device> devices;
  for (unsigned i = 0; i < count; ++i) {
    Device dev = nullptr;
    PciInfo pci{};
    if (api.handle(i, &dev) != nvml::kSuccess || api.pci(dev, &pci) != nvml::kSuccess) continue;
    NvmlGpu g;
    g.busId = busIdOf(pci);
    char name[96] = {};
    if (api.name(dev, name, sizeof(name) - 1) == nvml::kSuccess) g.name = name;
    unsigned v = 0;
    if (api.pcieGen != nullptr && api.pcieGen(dev, &v) == nvml::kSuccess) g.pcieGen = v;
    if (api.pcieWidth != nullptr && api.pcieWidth(dev, &v) == nvml::kSuccess) g.pcieWidth = v;
    report->gpus.push_back(g);
    devices.push_back(dev);
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    readLinks(api, devices[i], report->gpus[i], report->gpus, &report->nvlinks);
  }
}

int sysfsNuma(const std::string& busId) {
  int numa = -1;
  std::ifstream("/sys/bus/pci/devices/" + busId + "/numa_node") >> numa;
  return numa;
}

}  // namespace

std::string nvmlLibrary() {
  const std::string set = envString("BRAID_NVML_LIBRARY");
  return set.empty() ? "libnvidia-ml.so.1" : set;
}

double nvlinkGBpsPerLink(unsigned version) {
  // Per link and direction: NVLink 1 (P100) 20 GB/s; NVLink 2 (V100), 3 (A100)
  // and 4 (H100, 18 links = 450 GB/s) 25 GB/s; NVLink 5 (B200, 18 links =
  // 900 GB/s) 50 GB/s (NVIDIA's NVLink product pages). NVML numbers versions
  // 1.0, 2.0, 2.2, 3.0, 3.1, 4.0, 5.0 as 1..7.
  static constexpr double kGBps[] = {0, 20, 25, 25, 25, 25, 25, 50};
  return version < sizeof(kGBps) / sizeof(kGBps[0]) ? kGBps[version] : 0;
}

NvmlReport readNvml(const std::string& library) {
  NvmlReport report;
  report.library = library;
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    report.missing = "cannot open " + library + ": " + (why != nullptr ? why : "dlopen failed");
    return report;
  }
  Api api;
  std::string absent;
  load(lib, &api, &absent);
  if (!absent.empty()) {
    report.missing = library + " has no " + absent;
  } else if (Return r = api.init(); r != nvml::kSuccess) {
    report.missing = "nvmlInit: " + api.error(r);
  } else {
    readDevices(api, &report);
    api.shutdown();
  }
  if (!report.missing.empty()) {
    report.gpus.clear();
    report.nvlinks.clear();
  }
  dlclose(lib);
  return report;
}

void applyNvml(const NvmlReport& report, Node* node) {
  for (const NvmlGpu& g : report.gpus) {
    if (node->gpuIndex(g.busId) >= 0) continue;
    Gpu gpu;
    gpu.name = g.name;
    gpu.busId = g.busId;
    gpu.pcieGen = g.pcieGen;
    gpu.pcieWidth = g.pcieWidth;
    gpu.pcieGBps = pcieGBps(g.pcieGen, g.pcieWidth);
    gpu.numa = sysfsNuma(g.busId);
    node->gpus.push_back(gpu);
  }
  if (report.gpus.empty()) return;
  node->nvlinks.clear();
  for (Gpu& gpu : node->gpus) gpu.nvlinkGBps = 0;
  for (const Nvlink& l : report.nvlinks) {
    const int i = node->gpuIndex(l.gpu);
    if (i < 0 || (l.peer != kNvswitch && node->gpuIndex(l.peer) < 0)) continue;
    node->nvlinks.push_back(l);
    node->gpus[i].nvlinkGBps += l.gbps;
  }
}

}  // namespace braid::topo
