// device.h over the CUDA runtime (linked statically; it opens the driver on first use).
#include "cuda/device.h"

#include <cuda.h>  // driver types only: the driver is reached through cudart's entry points
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cctype>
#include <cstring>
#include <string>

#include "core/logging.h"
#include "cuda/driver_entry.h"
#include "cuda/relaxed_capture.h"

namespace braid::cuda {
namespace {

using detail::RelaxedCapture;

// The error, reported here, is taken off the thread's last error too, where the runtime
// leaves it for the application's next cudaGetLastError to find as its own.
Status cudaFailure(const char* call, cudaError_t err) {
  (void)cudaGetLastError();
  return Status(braidUnhandledCudaError, std::string(call) + " failed: " + cudaGetErrorName(err) +
                                             " (" + cudaGetErrorString(err) + ")");
}

#define BRAID_CUDA_CALL(call)                     \
  do {                                            \
    cudaError_t braid_cuda_err_ = (call);         \
    if (braid_cuda_err_ != cudaSuccess) {         \
      return cudaFailure(#call, braid_cuda_err_); \
    }                                             \
  } while (0)

DeviceStatus askDevices() {
  DeviceStatus s;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) {
    s.count = count;
    return s;
  }
  if (err == cudaSuccess) {
    s.reason = "no CUDA device: cudaGetDeviceCount found none";
  } else {
    // 34 cudaErrorStubLibrary, 35 cudaErrorInsufficientDriver, 100 cudaErrorNoDevice are the
    // ordinary "this machine has no usable GPU"; anything else is worth a warning.
    bool ordinary = err == cudaErrorStubLibrary || err == cudaErrorInsufficientDriver ||
                    err == cudaErrorNoDevice;
    s.reason = std::string("no CUDA device: cudaGetDeviceCount returned ") +
               std::to_string(static_cast<int>(err)) + " " + cudaGetErrorName(err) + " (" +
               cudaGetErrorString(err) + ")";
    if (!ordinary) BRAID_WARN("%s; the GPU path is off", s.reason.c_str());
    cudaGetLastError();  // the runtime keeps the error sticky for the next call otherwise
  }
  BRAID_INFO("%s; device buffers are refused, host memory works", s.reason.c_str());
  return s;
}

// The driver's cuPointerGetAttributes, through the runtime's entry-point table (libcuda is
// never linked). Unlike cudaPointerGetAttributes it needs no context, so classifying the
// host buffers of a process that never touches the GPU does not create one on device 0
// (hundreds of MB of GPU memory per process). nullptr where the driver does not offer it.
using PointerAttributesFn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);

PointerAttributesFn driverPointerAttributes() {
  static const auto fn =
      reinterpret_cast<PointerAttributesFn>(driverEntryPoint("cuPointerGetAttributes"));
  return fn;
}

// The driver's stream memory operations, found like cuPointerGetAttributes (nullptr where
// the driver lacks them).
using StreamValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned);

Status streamValueOp(const char* name, StreamValueFn fn, void* stream, void* addr, uint64_t value,
                     unsigned flags) {
  if (fn == nullptr) {
    return Status(braidUnhandledCudaError, std::string("the driver has no ") + name);
  }
  CUresult r = fn(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(addr), value, flags);
  if (r == CUDA_SUCCESS) return Status::ok();
  return Status(braidUnhandledCudaError,
                std::string(name) + " failed: CUresult " + std::to_string(static_cast<int>(r)));
}

}  // namespace

void* driverEntryPoint(const char* name) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return f;
}

bool compiled() { return true; }

const DeviceStatus& deviceStatus() {
  static const DeviceStatus status = askDevices();
  return status;
}

MemoryKind memoryKind(const void* p) {
  if (p == nullptr || !hasDevice()) return MemoryKind::kHost;
  if (PointerAttributesFn query = driverPointerAttributes()) {
    // Memory CUDA does not know reads as type 0, not as an error.
    unsigned type = 0, managed = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void* data[] = {&type, &managed};
    if (query(2, attrs, data, reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS) {
      return type == CU_MEMORYTYPE_DEVICE || managed != 0 ? MemoryKind::kDevice : MemoryKind::kHost;
    }
  }
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err != cudaSuccess) {  // older drivers answer "invalid value" for plain host memory
    cudaGetLastError();
    return MemoryKind::kHost;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged
             ? MemoryKind::kDevice
             : MemoryKind::kHost;
}

Status checkStream(void* stream) {
  if (!hasDevice()) return Status(braidInvalidArgument, deviceStatus().reason);
  // Querying a stream that captures a graph invalidates the capture: asked first (a call
  // on it is refused later, with the reason).
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture) != cudaSuccess) {
    cudaGetLastError();  // cudaStreamQuery says why below
  } else if (capture != cudaStreamCaptureStatusNone) {
    return Status::ok();
  }
  const RelaxedCapture relaxed;  // this thread may be capturing on another stream
  cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(stream));
  if (err == cudaSuccess || err == cudaErrorNotReady) return Status::ok();
  cudaGetLastError();
  return Status(braidInvalidArgument, std::string("cudaStreamQuery rejects it: ") +
                                          cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                                          ")");
}

Status streamSynchronize(void* stream) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  return Status::ok();
}

Expected<void*> streamCreate() {
  const RelaxedCapture relaxed;
  cudaStream_t s = nullptr;
  BRAID_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return static_cast<void*>(s);
}

Status streamDestroy(void* stream) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
  return Status::ok();
}

Expected<bool> streamCapturing(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status);
  if (err == cudaErrorStreamCaptureImplicit) {
    cudaGetLastError();
    return true;
  }
  if (err != cudaSuccess) return cudaFailure("cudaStreamIsCapturing", err);
  return status != cudaStreamCaptureStatusNone;
}

Status streamBeginCapture(void* stream, bool threadLocal) {
  BRAID_CUDA_CALL(cudaStreamBeginCapture(
      static_cast<cudaStream_t>(stream),
      threadLocal ? cudaStreamCaptureModeThreadLocal : cudaStreamCaptureModeGlobal));
  return Status::ok();
}

Expected<void*> streamEndCapture(void* stream) {
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
  if (err != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    return cudaFailure("cudaStreamEndCapture", err);
  }
  cudaGraphExec_t exec = nullptr;
  err = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (err != cudaSuccess) return cudaFailure("cudaGraphInstantiate", err);
  return static_cast<void*>(exec);
}

Status graphLaunch(void* graph, void* stream) {
  BRAID_CUDA_CALL(
      cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), static_cast<cudaStream_t>(stream)));
  return Status::ok();
}

Status graphDestroy(void* graph) {
  BRAID_CUDA_CALL(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)));
  return Status::ok();
}

Expected<void*> deviceAlloc(size_t bytes) {
  const RelaxedCapture relaxed;
  void* p = nullptr;
  BRAID_CUDA_CALL(cudaMalloc(&p, bytes));
  return p;
}

Status deviceFree(void* p) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaFree(p));
  return Status::ok();
}

Expected<void*> pinnedAlloc(size_t bytes) {
  const RelaxedCapture relaxed;
  void* p = nullptr;
  BRAID_CUDA_CALL(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return p;
}

Status pinnedFree(void* p) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaFreeHost(p));
  return Status::ok();
}

Expected<IpcHandle> ipcHandle(void* devicePtr) {
  const RelaxedCapture relaxed;
  static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "CUDA's IPC handle size");
  cudaIpcMemHandle_t h;
  BRAID_CUDA_CALL(cudaIpcGetMemHandle(&h, devicePtr));
  IpcHandle out;
  std::memcpy(out.bytes, &h, kIpcHandleBytes);
  return out;
}

Expected<void*> ipcOpen(const IpcHandle& handle) {
  const RelaxedCapture relaxed;
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle.bytes, kIpcHandleBytes);
  void* p = nullptr;
  BRAID_CUDA_CALL(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  return p;
}

Status ipcClose(void* mapped) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaIpcCloseMemHandle(mapped));
  return Status::ok();
}

Expected<int> currentDevice() {
  int d = 0;
  BRAID_CUDA_CALL(cudaGetDevice(&d));
  return d;
}

Status setCurrentDevice(int device) {
  BRAID_CUDA_CALL(cudaSetDevice(device));
  return Status::ok();
}

Status enablePeerAccess(int peer) {
  const RelaxedCapture relaxed;
  int self = 0;
  BRAID_CUDA_CALL(cudaGetDevice(&self));
  if (self == peer) return Status::ok();
  int can = 0;
  BRAID_CUDA_CALL(cudaDeviceCanAccessPeer(&can, self, peer));
  if (can == 0) {
    return Status(
        braidUnhandledCudaError,
        "device " + std::to_string(self) + " has no peer access to device " + std::to_string(peer));
  }
  const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return Status::ok();
  }
  if (err != cudaSuccess) return cudaFailure("cudaDeviceEnablePeerAccess", err);
  return Status::ok();
}

std::string boundDeviceBusId() {
  // The driver the process already loaded, asked directly: going through cudart's
  // entry points would initialise the runtime (and the driver) in a process that never
  // touched CUDA. Before the application's cuInit, cuCtxGetCurrent answers
  // CUDA_ERROR_NOT_INITIALIZED: no device bound.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return "";
  using GetCurrentFn = CUresult (*)(CUcontext*);
  using GetDeviceFn = CUresult (*)(CUdevice*);
  using BusIdFn = CUresult (*)(char*, int, CUdevice);
  const auto getCurrent = reinterpret_cast<GetCurrentFn>(dlsym(driver, "cuCtxGetCurrent"));
  const auto getDevice = reinterpret_cast<GetDeviceFn>(dlsym(driver, "cuCtxGetDevice"));
  const auto busIdOf = reinterpret_cast<BusIdFn>(dlsym(driver, "cuDeviceGetPCIBusId"));
  std::string out;
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  char bus[32] = {};
  if (getCurrent != nullptr && getDevice != nullptr && busIdOf != nullptr &&
      getCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr && getDevice(&dev) == CUDA_SUCCESS &&
      busIdOf(bus, sizeof(bus), dev) == CUDA_SUCCESS) {
    for (const char* c = bus; *c != '\0'; ++c) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    }
  }
  dlclose(driver);  // the NOLOAD open's reference only
  return out;
}

Expected<DeviceUuid> deviceUuid(int device) {
  const RelaxedCapture relaxed;
  cudaDeviceProp prop{};
  BRAID_CUDA_CALL(cudaGetDeviceProperties(&prop, device));
  static_assert(sizeof(prop.uuid.bytes) == sizeof(DeviceUuid::bytes), "CUDA's UUID size");
  DeviceUuid out;
  std::memcpy(out.bytes, prop.uuid.bytes, sizeof(out.bytes));
  return out;
}

Status copyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  BRAID_CUDA_CALL(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)));
  return Status::ok();
}

Status memsetAsync(void* dst, int value, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  BRAID_CUDA_CALL(cudaMemsetAsync(dst, value, bytes, static_cast<cudaStream_t>(stream)));
  return Status::ok();
}

Expected<bool> streamIdle(void* stream) {
  const RelaxedCapture relaxed;
  cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(stream));
  if (err == cudaSuccess) return true;
  if (err == cudaErrorNotReady) return false;
  return cudaFailure("cudaStreamQuery", err);
}

Expected<void*> eventCreate() {
  const RelaxedCapture relaxed;
  cudaEvent_t e = nullptr;
  BRAID_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return static_cast<void*>(e);
}

Status eventDestroy(void* event) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  return Status::ok();
}

Status eventRecord(void* event, void* stream) {
  BRAID_CUDA_CALL(
      cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
  return Status::ok();
}

Status streamWaitEvent(void* stream, void* event) {
  BRAID_CUDA_CALL(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
  return Status::ok();
}

Status eventSynchronize(void* event) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
  return Status::ok();
}

Expected<bool> eventDone(void* event) {
  const RelaxedCapture relaxed;
  cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (err == cudaSuccess) return true;
  if (err == cudaErrorNotReady) return false;
  return cudaFailure("cudaEventQuery", err);
}

Expected<void*> hostRegister(void* p, size_t bytes) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
  void* device = nullptr;
  cudaError_t err = cudaHostGetDevicePointer(&device, p, 0);
  if (err != cudaSuccess) {
    (void)cudaHostUnregister(p);
    return cudaFailure("cudaHostGetDevicePointer", err);
  }
  return device;
}

Status hostUnregister(void* p) {
  const RelaxedCapture relaxed;
  BRAID_CUDA_CALL(cudaHostUnregister(p));
  return Status::ok();
}

Status streamWriteValue64(void* stream, void* deviceAddr, uint64_t value) {
  static const auto fn = reinterpret_cast<StreamValueFn>(driverEntryPoint("cuStreamWriteValue64"));
  return streamValueOp("cuStreamWriteValue64", fn, stream, deviceAddr, value,
                       CU_STREAM_WRITE_VALUE_DEFAULT);
}

Status streamWaitValue64(void* stream, void* deviceAddr, uint64_t value) {
  static const auto fn = reinterpret_cast<StreamValueFn>(driverEntryPoint("cuStreamWaitValue64"));
  return streamValueOp("cuStreamWaitValue64", fn, stream, deviceAddr, value,
                       CU_STREAM_WAIT_VALUE_GEQ);
}

}  // namespace braid::cuda
