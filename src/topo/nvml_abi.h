// The part of NVML's C ABI (nvml.h, NVIDIA Management Library) that NVLink
// discovery calls, declared here because Braid neither links NVML nor needs its
// header to build: the library is opened at run time (topo/nvml.h). The fake
// NVML of the tests implements the same declarations. Layouts and values are
// NVML's; only what is used is declared.
#pragma once

namespace braid::topo::nvml {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorInvalidArgument = 2;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNotFound = 6;
constexpr Return kErrorDriverNotLoaded = 9;

struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t

// nvmlPciInfo_t (busId filled from the _v3 calls on): "00000000:1B:00.0".
struct PciInfo {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

constexpr unsigned kFeatureEnabled = 1;  // nvmlEnableState_t
// nvmlIntNvLinkDeviceType_t: what the far end of a link is.
constexpr unsigned kLinkToGpu = 0;
constexpr unsigned kLinkToIbmNpu = 1;
constexpr unsigned kLinkToSwitch = 2;
// NVML_NVLINK_MAX_LINKS of current drivers; older ones answer
// kErrorInvalidArgument past their last link.
constexpr unsigned kMaxLinks = 18;

extern "C" {
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using GetCountFn = Return (*)(unsigned*);
using GetHandleByIndexFn = Return (*)(unsigned, Device*);
using GetPciInfoFn = Return (*)(Device, PciInfo*);
using GetNameFn = Return (*)(Device, char*, unsigned);
using GetUnsignedFn = Return (*)(Device, unsigned*);  // PCIe generation, width
using GetLinkStateFn = Return (*)(Device, unsigned, unsigned*);
using GetLinkVersionFn = Return (*)(Device, unsigned, unsigned*);
using GetLinkRemotePciFn = Return (*)(Device, unsigned, PciInfo*);
using GetLinkRemoteTypeFn = Return (*)(Device, unsigned, unsigned*);
}

}  // namespace braid::topo::nvml
