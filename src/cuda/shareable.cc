// device.h's shareable device memory over the driver's virtual memory management (cuMem),
// reached through cudart's entry-point table as the rest of device.cc reaches the driver
// (nothing links libcuda). An allocation is one physical handle (cuMemCreate, POSIX file
// descriptor handles requested) mapped at an address range of its own and made
// read-write for the device; an import maps another process's handle the same way.
#include <cuda.h>  // driver types only
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "core/logging.h"
#include "cuda/device.h"
#include "cuda/driver_entry.h"
#include "cuda/relaxed_capture.h"

namespace braid::cuda {
namespace {

// The driver functions this file uses, found once (null where the driver lacks one).
struct Driver {
  decltype(&cuCtxGetCurrent) ctxGetCurrent = nullptr;
  decltype(&cuCtxGetDevice) ctxGetDevice = nullptr;
  decltype(&cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) addressFree = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) setAccess = nullptr;
  decltype(&cuMemExportToShareableHandle) exportHandle = nullptr;
  decltype(&cuMemImportFromShareableHandle) importHandle = nullptr;
  bool complete = false;
};

template <typename Fn>
void find(const char* name, Fn* fn, bool* complete) {
  *fn = reinterpret_cast<Fn>(driverEntryPoint(name));
  *complete = *complete && *fn != nullptr;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver x;
    x.complete = true;
    find("cuCtxGetCurrent", &x.ctxGetCurrent, &x.complete);
    find("cuCtxGetDevice", &x.ctxGetDevice, &x.complete);
    find("cuDeviceGetAttribute", &x.deviceGetAttribute, &x.complete);
    find("cuMemGetAllocationGranularity", &x.granularity, &x.complete);
    find("cuMemCreate", &x.create, &x.complete);
    find("cuMemRelease", &x.release, &x.complete);
    find("cuMemAddressReserve", &x.reserve, &x.complete);
    find("cuMemAddressFree", &x.addressFree, &x.complete);
    find("cuMemMap", &x.map, &x.complete);
    find("cuMemUnmap", &x.unmap, &x.complete);
    find("cuMemSetAccess", &x.setAccess, &x.complete);
    find("cuMemExportToShareableHandle", &x.exportHandle, &x.complete);
    find("cuMemImportFromShareableHandle", &x.importHandle, &x.complete);
    return x;
  }();
  return d;
}

Status failed(const char* call, CUresult r) {
  return Status(braidUnhandledCudaError,
                std::string(call) + " failed: CUresult " + std::to_string(static_cast<int>(r)));
}

#define BRAID_CU_CALL(name, call)       \
  do {                                  \
    CUresult braid_cu_r_ = (call);      \
    if (braid_cu_r_ != CUDA_SUCCESS) {  \
      return failed(name, braid_cu_r_); \
    }                                   \
  } while (0)

struct Mapping {
  size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;  // kept for export; 0 for an import
  bool cuMem = true;                        // false: a cudaMalloc fallback
  bool imported = false;
};

// This process's allocations and imports, by address. Leaked, so late threads at exit
// never meet a destroyed map.
std::mutex& mappingsMu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::map<uintptr_t, Mapping>& mappings() {
  static auto* m = new std::map<uintptr_t, Mapping>;
  return *m;
}

// The device of this thread's current context; without one, the runtime's current
// device, whose primary context becomes current (cudaFree(nullptr) makes it).
Expected<int> allocationDevice() {
  const Driver& d = driver();
  CUcontext ctx = nullptr;
  if (d.complete && d.ctxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr) {
    CUdevice dev = 0;
    BRAID_CU_CALL("cuCtxGetDevice", d.ctxGetDevice(&dev));
    return static_cast<int>(dev);
  }
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    cudaGetLastError();
    return Status(braidUnhandledCudaError, "no CUDA device could be made current");
  }
  return dev;
}

CUmemAllocationProp propertiesFor(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Whether the device takes cuMem allocations with POSIX file descriptor handles.
bool sharesByFd(int device) {
  const Driver& d = driver();
  if (!d.complete) return false;
  int vmm = 0, fd = 0;
  return d.deviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                              device) == CUDA_SUCCESS &&
         d.deviceGetAttribute(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                              device) == CUDA_SUCCESS &&
         vmm != 0 && fd != 0;
}

// Maps `handle` (bytes, a multiple of the granularity) at a new address range, read-write
// for `device`; on failure nothing stays reserved.
Expected<CUdeviceptr> mapHandle(CUmemGenericAllocationHandle handle, size_t bytes, int device,
                                size_t alignment) {
  const Driver& d = driver();
  CUdeviceptr p = 0;
  BRAID_CU_CALL("cuMemAddressReserve", d.reserve(&p, bytes, alignment, 0, 0));
  CUresult r = d.map(p, bytes, 0, handle, 0);
  if (r != CUDA_SUCCESS) {
    (void)d.addressFree(p, bytes);
    return failed("cuMemMap", r);
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = d.setAccess(p, bytes, &access, 1);
  if (r != CUDA_SUCCESS) {
    (void)d.unmap(p, bytes);
    (void)d.addressFree(p, bytes);
    return failed("cuMemSetAccess", r);
  }
  return p;
}

Expected<size_t> granularityOf(int device) {
  CUmemAllocationProp prop = propertiesFor(device);
  size_t g = 0;
  BRAID_CU_CALL("cuMemGetAllocationGranularity",
                driver().granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  return g == 0 ? size_t{2} << 20 : g;
}

// Unmaps [p, p + bytes) and frees the address range, once the device's work still using
// it has finished (as cudaFree waits). The synchronisation invalidates a CUDA graph
// capture in progress on any stream, relaxed or not (seen on an H200; braid.h says so).
Status unmapRange(void* p, size_t bytes) {
  if (cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
  const Driver& d = driver();
  const auto at = reinterpret_cast<CUdeviceptr>(p);
  BRAID_CU_CALL("cuMemUnmap", d.unmap(at, bytes));
  BRAID_CU_CALL("cuMemAddressFree", d.addressFree(at, bytes));
  return Status::ok();
}

// Takes the mapping at p (of the kind `imported` says) out of the registry.
bool takeMapping(void* p, bool imported, Mapping* out) {
  std::lock_guard<std::mutex> lock(mappingsMu());
  auto it = mappings().find(reinterpret_cast<uintptr_t>(p));
  if (it == mappings().end() || it->second.imported != imported) return false;
  *out = it->second;
  mappings().erase(it);
  return true;
}

}  // namespace

// Each call below runs in relaxed capture mode (cuda/relaxed_capture.h): the driver's
// virtual memory calls are as unsafe during a capture as cudaMalloc.
Expected<void*> shareableAlloc(size_t bytes) {
  const detail::RelaxedCapture relaxed;
  if (!hasDevice()) return Status(braidUnhandledCudaError, deviceStatus().reason);
  BRAID_ASSIGN_OR_RETURN(int device, allocationDevice());
  if (!sharesByFd(device)) {
    BRAID_INFO(
        "device %d takes no cuMem allocations with POSIX file descriptor handles: "
        "device memory comes from cudaMalloc, which peers cannot map by descriptor",
        device);
    BRAID_ASSIGN_OR_RETURN(void* p, deviceAlloc(bytes));
    std::lock_guard<std::mutex> lock(mappingsMu());
    mappings()[reinterpret_cast<uintptr_t>(p)] = Mapping{bytes, 0, false, false};
    return p;
  }
  const Driver& d = driver();
  BRAID_ASSIGN_OR_RETURN(size_t g, granularityOf(device));
  const size_t rounded = (std::max<size_t>(bytes, 1) + g - 1) / g * g;
  CUmemAllocationProp prop = propertiesFor(device);
  CUmemGenericAllocationHandle handle = 0;
  BRAID_CU_CALL("cuMemCreate", d.create(&handle, rounded, &prop, 0));
  Expected<CUdeviceptr> p = mapHandle(handle, rounded, device, g);
  if (!p.isOk()) {
    (void)d.release(handle);
    return p.status();
  }
  std::lock_guard<std::mutex> lock(mappingsMu());
  mappings()[static_cast<uintptr_t>(p.value())] = Mapping{rounded, handle, true, false};
  return reinterpret_cast<void*>(p.value());
}

bool isShareable(const void* p) {
  std::lock_guard<std::mutex> lock(mappingsMu());
  auto it = mappings().find(reinterpret_cast<uintptr_t>(p));
  return it != mappings().end() && !it->second.imported;
}

Status shareableFree(void* p) {
  const detail::RelaxedCapture relaxed;
  Mapping m;
  if (!takeMapping(p, false, &m)) {
    return Status(braidInvalidArgument,
                  "the pointer is not device memory from braidMemAllocDevice");
  }
  if (!m.cuMem) return deviceFree(p);
  BRAID_TRY(unmapRange(p, m.bytes));
  BRAID_CU_CALL("cuMemRelease", driver().release(m.handle));
  return Status::ok();
}

Expected<int> shareableExport(const void* p, size_t* bytes) {
  const detail::RelaxedCapture relaxed;
  Mapping m;
  {
    std::lock_guard<std::mutex> lock(mappingsMu());
    auto it = mappings().find(reinterpret_cast<uintptr_t>(p));
    if (it == mappings().end() || it->second.imported) {
      return Status(braidInvalidArgument, "only the start of braidMemAllocDevice's memory exports");
    }
    m = it->second;
  }
  if (!m.cuMem) {
    return Status(braidInvalidUsage,
                  "this device memory came from cudaMalloc (the device takes no cuMem "
                  "allocations with POSIX file descriptor handles): it has no descriptor");
  }
  int fd = -1;
  BRAID_CU_CALL("cuMemExportToShareableHandle",
                driver().exportHandle(&fd, m.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  *bytes = m.bytes;
  return fd;
}

Expected<void*> shareableImport(int fd, size_t bytes) {
  const detail::RelaxedCapture relaxed;
  if (!hasDevice()) return Status(braidUnhandledCudaError, deviceStatus().reason);
  if (!driver().complete) {
    return Status(braidUnhandledCudaError, "the driver has no virtual memory management (cuMem)");
  }
  BRAID_ASSIGN_OR_RETURN(int device, allocationDevice());
  const Driver& d = driver();
  BRAID_ASSIGN_OR_RETURN(size_t g, granularityOf(device));
  CUmemGenericAllocationHandle handle = 0;
  BRAID_CU_CALL("cuMemImportFromShareableHandle",
                d.importHandle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  Expected<CUdeviceptr> p = mapHandle(handle, bytes, device, g);
  (void)d.release(handle);  // the mapping holds the memory from here on
  if (!p.isOk()) return p.status();
  std::lock_guard<std::mutex> lock(mappingsMu());
  mappings()[static_cast<uintptr_t>(p.value())] = Mapping{bytes, 0, true, true};
  return reinterpret_cast<void*>(p.value());
}

Status shareableUnmap(void* p) {
  const detail::RelaxedCapture relaxed;
  Mapping m;
  if (!takeMapping(p, true, &m)) {
    return Status(braidInvalidArgument, "the pointer is not a mapping from shareableImport");
  }
  return unmapRange(p, m.bytes);
}

}  // namespace braid::cuda
