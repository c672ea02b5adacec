// A fake libnvidia-ml.so for tests (loaded through BRAID_NVML_LIBRARY): it answers
// the NVML calls topo/nvml.cc makes as a real driver would on the machine that
// BRAID_FAKE_NVML names, read at nvmlInit:
//   dgx_h100    8 x H100 SXM with the bus ids of tests/data/topo/dgx_h100.xml,
//               18 NVLink 4.0 links each, all to the NVSwitches (DGX H100 User
//               Guide: 4 NVSwitch chips, 18 links per GPU)
//   pcie_8gpu   8 x A100 PCIe with the bus ids of pcie_8gpu.xml, no NVLink
//               (NVML answers "not supported" for every link)
//   pcie_pairs  the same 8 GPUs with NVLink bridges joining 0-1, 2-3, 4-5, 6-7,
//               12 NVLink 3.0 links per pair (A100 PCIe's bridge)
//   no_driver   (or unset) nvmlInit fails with "Driver Not Loaded"
// NVML's formats are kept: bus ids as "00000000:1B:00.0", NVLink versions as
// nvmlNvlinkVersion_t (4.0 is 6, 3.0 is 4).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "topo/nvml_abi.h"

namespace braid::topo::nvml {

struct DeviceSt {
  std::string busId;  // NVML's form
  std::string name;
  unsigned pcieGen = 0;
  unsigned pcieWidth = 0;
  unsigned links = 0;
  unsigned version = 0;
  int peer = -1;  // the GPU its links reach; -1: the NVSwitches
};

}  // namespace braid::topo::nvml

namespace {

using braid::topo::nvml::Device;
using braid::topo::nvml::DeviceSt;
using braid::topo::nvml::PciInfo;
using braid::topo::nvml::Return;
namespace nvml = braid::topo::nvml;

std::vector<DeviceSt> gDevices;
bool gInitialised = false;

void machine(const std::string& kind) {
  gDevices.clear();
  if (kind == "dgx_h100") {
    for (const char* bus : {"1B", "43", "52", "61", "9D", "C3", "D1", "DF"}) {
      gDevices.push_back(
          {std::string("00000000:") + bus + ":00.0", "NVIDIA H100 80GB HBM3", 5, 16, 18, 6, -1});
    }
  } else if (kind == "pcie_8gpu" || kind == "pcie_pairs") {
    const bool bridged = kind == "pcie_pairs";
    int i = 0;
    for (const char* bus : {"1A", "1B", "1C", "1D", "88", "89", "8A", "8B"}) {
      gDevices.push_back({std::string("00000000:") + bus + ":00.0", "NVIDIA A100 80GB PCIe", 4, 16,
                          bridged ? 12u : 0u, 4, bridged ? (i ^ 1) : -1});
      ++i;
    }
  }
}

void fill(PciInfo* pci, const std::string& busId) {
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", busId.c_str());
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%s", busId.c_str() + 4);
  std::sscanf(busId.c_str(), "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
}

// The device's link `link`, or an NVML error as a real driver gives it.
Return linkOf(Device dev, unsigned link, const DeviceSt** out) {
  if (!gInitialised) return 1;  // NVML_ERROR_UNINITIALIZED
  if (dev == nullptr) return nvml::kErrorInvalidArgument;
  if (dev->links == 0) return nvml::kErrorNotSupported;
  if (link >= nvml::kMaxLinks) return nvml::kErrorInvalidArgument;
  *out = dev;
  return nvml::kSuccess;
}

}  // namespace

extern "C" {

Return nvmlInit_v2() {
  const char* kind = std::getenv("BRAID_FAKE_NVML");
  if (kind == nullptr || std::strcmp(kind, "no_driver") == 0) return nvml::kErrorDriverNotLoaded;
  machine(kind);
  gInitialised = true;
  return nvml::kSuccess;
}

Return nvmlShutdown() {
  gInitialised = false;
  return nvml::kSuccess;
}

const char* nvmlErrorString(Return r) {
  switch (r) {
    case nvml::kSuccess:
      return "Success";
    case nvml::kErrorInvalidArgument:
      return "Invalid Argument";
    case nvml::kErrorNotSupported:
      return "Not Supported";
    case nvml::kErrorDriverNotLoaded:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

Return nvmlDeviceGetCount_v2(unsigned* count) {
  if (!gInitialised) return 1;
  *count = static_cast<unsigned>(gDevices.size());
  return nvml::kSuccess;
}

Return nvmlDeviceGetHandleByIndex_v2(unsigned index, Device* dev) {
  if (!gInitialised) return 1;
  if (index >= gDevices.size()) return nvml::kErrorInvalidArgument;
  *dev = &gDevices[index];
  return nvml::kSuccess;
}

Return nvmlDeviceGetPciInfo_v3(Device dev, PciInfo* pci) {
  if (!gInitialised) return 1;
  fill(pci, dev->busId);
  return nvml::kSuccess;
}

Return nvmlDeviceGetName(Device dev, char* name, unsigned length) {
  if (!gInitialised) return 1;
  std::snprintf(name, length, "%s", dev->name.c_str());
  return nvml::kSuccess;
}

Return nvmlDeviceGetMaxPcieLinkGeneration(Device dev, unsigned* gen) {
  *gen = dev->pcieGen;
  return nvml::kSuccess;
}

Return nvmlDeviceGetMaxPcieLinkWidth(Device dev, unsigned* width) {
  *width = dev->pcieWidth;
  return nvml::kSuccess;
}

Return nvmlDeviceGetNvLinkState(Device dev, unsigned link, unsigned* active) {
  const DeviceSt* d = nullptr;
  if (Return r = linkOf(dev, link, &d); r != nvml::kSuccess) return r;
  *active = link < d->links ? nvml::kFeatureEnabled : 0;
  return nvml::kSuccess;
}

Return nvmlDeviceGetNvLinkVersion(Device dev, unsigned link, unsigned* version) {
  const DeviceSt* d = nullptr;
  if (Return r = linkOf(dev, link, &d); r != nvml::kSuccess) return r;
  *version = d->version;
  return nvml::kSuccess;
}

Return nvmlDeviceGetNvLinkRemotePciInfo_v2(Device dev, unsigned link, PciInfo* pci) {
  const DeviceSt* d = nullptr;
  if (Return r = linkOf(dev, link, &d); r != nvml::kSuccess) return r;
  if (d->peer >= 0) {
    fill(pci, gDevices[d->peer].busId);
  } else {
    // Four NVSwitch chips, the links spread over them as on a DGX H100.
    char bus[32];
    std::snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0x05 + link % 4);
    fill(pci, bus);
  }
  return nvml::kSuccess;
}

Return nvmlDeviceGetNvLinkRemoteDeviceType(Device dev, unsigned link, unsigned* type) {
  const DeviceSt* d = nullptr;
  if (Return r = linkOf(dev, link, &d); r != nvml::kSuccess) return r;
  *type = d->peer >= 0 ? nvml::kLinkToGpu : nvml::kLinkToSwitch;
  return nvml::kSuccess;
}

}  // extern "C"
