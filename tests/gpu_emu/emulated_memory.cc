// The emulated GPU's memory: device allocations as shared mappings, pinned and registered
// host memory, CUDA IPC between processes, and the device's identity.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "cuda/device.h"
#include "tests/gpu_emu/emulated_gpu.h"
#include "tests/gpu_emu/emulated_internal.h"

namespace braid::cuda {
namespace emu {
namespace {

struct Allocation {
  size_t bytes = 0;
  Region region = Region::kDevice;
  int fd = -1;          // a device allocation made here (its IPC handle names it)
  bool mapped = false;  // a peer's device allocation, mapped by ipcOpen
  char* view = nullptr;  // device memory: where the emulated device reaches it
};

// Every allocation this process knows, by start address. Leaked, so threads still
// running at exit never meet a destroyed map.
class Allocations {
 public:
  static Allocations& get() {
    static Allocations* all = new Allocations;
    return *all;
  }
  void add(void* base, const Allocation& a) {
    std::lock_guard<std::mutex> lock(mu_);
    map_[reinterpret_cast<uintptr_t>(base)] = a;
  }
  // The allocation starting exactly at `base` (removed), or false.
  bool take(void* base, Region region, Allocation* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(reinterpret_cast<uintptr_t>(base));
    if (it == map_.end() || it->second.region != region) return false;
    *out = it->second;
    map_.erase(it);
    return true;
  }
  size_t deviceBytes() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t total = 0;
    for (const auto& [base, a] : map_) {
      if (a.region == Region::kDevice && !a.mapped) total += a.bytes;
    }
    return total;
  }
  // The allocation holding `p`, with its start, or false.
  bool holding(const void* p, uintptr_t* base, Allocation* out) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto at = reinterpret_cast<uintptr_t>(p);
    auto it = map_.upper_bound(at);
    if (it == map_.begin()) return false;
    --it;
    if (at >= it->first + std::max<size_t>(it->second.bytes, 1)) return false;
    *base = it->first;
    *out = it->second;
    return true;
  }

 private:
  std::mutex mu_;
  std::map<uintptr_t, Allocation> map_;
};

std::mutex faultMu;
std::string faultText;  // empty: no fault

// What an IPC handle carries: whose allocation it is and how to reach it.
struct HandleBody {
  char magic[8];
  int32_t pid;
  int32_t fd;
  uint64_t bytes;
};
constexpr char kMagic[8] = {'b', 'r', 'a', 'i', 'd', 'e', 'm', 'u'};
static_assert(sizeof(HandleBody) <= kIpcHandleBytes, "fits CUDA's handle");

constexpr unsigned char kFreshDeviceByte = 0xcb;  // cudaMalloc's memory is not zeroed

// Device memory as two mappings of its file: the address Braid gets, which no host code
// can touch (PROT_NONE: a host read or write faults, as it would on a GPU), and the view
// the emulated device's work uses. Null on failure, with errno.
void* mapDevice(int fd, size_t bytes, char** view) {
  void* v = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (v == MAP_FAILED) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    munmap(v, bytes);
    errno = err;
    return nullptr;
  }
  *view = static_cast<char*>(v);
  return p;
}

void unmapDevice(void* p, const Allocation& a) {
  munmap(p, a.bytes);
  munmap(a.view, a.bytes);
}

}  // namespace

void* reach(const void* p) {
  uintptr_t base = 0;
  Allocation a;
  if (p == nullptr || !Allocations::get().holding(p, &base, &a) || a.view == nullptr) {
    return const_cast<void*>(p);
  }
  return a.view + (reinterpret_cast<uintptr_t>(p) - base);
}

Region regionOf(const void* p, size_t bytes, bool* overrun) {
  if (overrun != nullptr) *overrun = false;
  uintptr_t base = 0;
  Allocation a;
  if (p == nullptr || !Allocations::get().holding(p, &base, &a)) return Region::kPageable;
  if (reinterpret_cast<uintptr_t>(p) + bytes > base + a.bytes) {
    if (overrun != nullptr) *overrun = true;
    return Region::kPageable;
  }
  return a.region;
}

Status emulated(const std::string& what) {
  return Status(braidUnhandledCudaError, "emulated GPU: " + what);
}

size_t deviceBytesInUse() { return Allocations::get().deviceBytes(); }

void fault(const std::string& what) {
  std::lock_guard<std::mutex> lock(faultMu);
  if (faultText.empty()) faultText = what;
}

Status stickyFault() {
  std::lock_guard<std::mutex> lock(faultMu);
  if (faultText.empty()) return Status::ok();
  return emulated("an earlier kernel or copy faulted (sticky, as on a GPU): " + faultText);
}

}  // namespace emu

using emu::Allocation;
using emu::Allocations;
using emu::emulated;
using emu::Region;

bool compiled() { return true; }

namespace emu {

int deviceCount() {  // read each time: a test's child process sets it after fork
  const char* v = getenv("BRAID_EMU_DEVICES");
  return v != nullptr ? std::min(kMaxDevices, std::max(1, atoi(v))) : 1;
}

int& currentDeviceOfThread() {
  thread_local int device = 0;
  return device;
}

bool& threadChoseDevice() {
  thread_local bool chose = false;
  return chose;
}

namespace {
std::atomic<uint32_t> gContexts{0};
std::mutex& deviceWideMu() {
  static auto* mu = new std::mutex;
  return *mu;
}
}  // namespace

void makeContext() {
  { std::lock_guard<std::mutex> wait(deviceWideMu()); }
  gContexts.fetch_or(1u << currentDeviceOfThread());
}

DeviceWideWait::DeviceWideWait() {
  makeContext();
  deviceWideMu().lock();
  drainAll();
}

DeviceWideWait::~DeviceWideWait() { deviceWideMu().unlock(); }

uint32_t devicesWithContext() { return gContexts.load(); }

}  // namespace emu

const DeviceStatus& deviceStatus() {
  static const DeviceStatus status{emu::deviceCount(), ""};
  return status;
}

MemoryKind memoryKind(const void* p) {
  uintptr_t base = 0;
  Allocation a;
  if (p == nullptr || !Allocations::get().holding(p, &base, &a)) return MemoryKind::kHost;
  return a.region == Region::kDevice ? MemoryKind::kDevice : MemoryKind::kHost;
}

Expected<void*> deviceAlloc(size_t bytes) {
  emu::makeContext();
  if (bytes == 0) return static_cast<void*>(nullptr);  // as cudaMalloc(0)
  int fd = memfd_create("braid-emulated-device", MFD_CLOEXEC);
  if (fd < 0) return emulated(std::string("memfd_create: ") + std::strerror(errno));
  void* p = nullptr;
  char* view = nullptr;
  if (ftruncate(fd, static_cast<off_t>(bytes)) == 0) p = emu::mapDevice(fd, bytes, &view);
  if (p == nullptr) {
    const int err = errno;
    close(fd);
    return emulated("device allocation of " + std::to_string(bytes) +
                    " bytes: " + std::strerror(err));
  }
  std::memset(view, emu::kFreshDeviceByte, bytes);
  Allocations::get().add(p, Allocation{bytes, Region::kDevice, fd, false, view});
  return p;
}

Status deviceFree(void* p) {
  if (p == nullptr) {
    emu::makeContext();
    return Status::ok();
  }
  const emu::DeviceWideWait wait;
  Allocation a;
  if (!Allocations::get().take(p, Region::kDevice, &a) || a.mapped) {
    return emulated("deviceFree of a pointer deviceAlloc did not return");
  }
  emu::unmapDevice(p, a);
  close(a.fd);
  return Status::ok();
}

Expected<void*> pinnedAlloc(size_t bytes) {
  emu::makeContext();
  const size_t rounded = (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, rounded);
  if (p == nullptr) return emulated("pinned allocation of " + std::to_string(bytes) + " bytes");
  Allocations::get().add(p, Allocation{rounded, Region::kPinned, -1, false});
  return p;
}

Status pinnedFree(void* p) {
  emu::makeContext();
  emu::drainAll();
  Allocation a;
  if (!Allocations::get().take(p, Region::kPinned, &a)) {
    return emulated("pinnedFree of a pointer pinnedAlloc did not return");
  }
  std::free(p);
  return Status::ok();
}

Expected<void*> hostRegister(void* p, size_t bytes) {
  emu::makeContext();
  emu::drainAll();
  if (p == nullptr || bytes == 0) return emulated("hostRegister of an empty range");
  if (emu::regionOf(p, 1) != Region::kPageable || emu::regionOf(p, bytes) != Region::kPageable) {
    return emulated("hostRegister of memory already registered, pinned or on the device");
  }
  Allocations::get().add(p, Allocation{bytes, Region::kRegistered, -1, false});
  return p;  // unified addressing: the device reaches it at the same address
}

Status hostUnregister(void* p) {
  emu::makeContext();
  emu::drainAll();
  Allocation a;
  if (!Allocations::get().take(p, Region::kRegistered, &a)) {
    return emulated("hostUnregister of memory hostRegister did not register");
  }
  return Status::ok();
}

Expected<IpcHandle> ipcHandle(void* devicePtr) {
  emu::makeContext();
  uintptr_t base = 0;
  Allocation a;
  if (!Allocations::get().holding(devicePtr, &base, &a) || a.region != Region::kDevice ||
      a.mapped) {
    return emulated("ipcHandle of memory that deviceAlloc did not return in this process");
  }
  // As CUDA's: the handle is the whole allocation's, whatever address inside it was given.
  emu::HandleBody body{};
  std::memcpy(body.magic, emu::kMagic, sizeof(body.magic));
  body.pid = getpid();
  body.fd = a.fd;
  body.bytes = a.bytes;
  IpcHandle h{};
  std::memcpy(h.bytes, &body, sizeof(body));
  return h;
}

Expected<void*> ipcOpen(const IpcHandle& handle) {
  emu::makeContext();
  emu::drainAll();
  emu::HandleBody body{};
  std::memcpy(&body, handle.bytes, sizeof(body));
  if (std::memcmp(body.magic, emu::kMagic, sizeof(body.magic)) != 0) {
    return emulated("ipcOpen of bytes that are not an IPC handle");
  }
  if (body.pid == getpid()) {
    return emulated("ipcOpen in the process that made the handle (CUDA refuses it too)");
  }
  const std::string path = "/proc/" + std::to_string(body.pid) + "/fd/" + std::to_string(body.fd);
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return emulated("ipcOpen: " + path + ": " + std::strerror(errno));
  char* view = nullptr;
  void* p = emu::mapDevice(fd, body.bytes, &view);
  const int err = errno;
  close(fd);
  if (p == nullptr) return emulated("ipcOpen: mapping " + path + ": " + std::strerror(err));
  Allocations::get().add(p, Allocation{body.bytes, Region::kDevice, -1, true, view});
  return p;
}

Status ipcClose(void* mapped) {
  emu::makeContext();
  emu::drainAll();
  Allocation a;
  if (!Allocations::get().take(mapped, Region::kDevice, &a) || !a.mapped) {
    return emulated("ipcClose of a pointer ipcOpen did not return");
  }
  emu::unmapDevice(mapped, a);
  return Status::ok();
}

// Shareable memory: a device allocation whose memfd is the descriptor a peer maps (cuMem's
// POSIX file descriptor handle, emulated). Sizes round up to 2 MiB, as on an H100.
namespace {
constexpr size_t kGranularity = size_t{2} << 20;
std::mutex shareableMu;
std::map<uintptr_t, size_t>* shareables = new std::map<uintptr_t, size_t>;  // made here
}  // namespace

Expected<void*> shareableAlloc(size_t bytes) {
  emu::makeContext();
  const size_t rounded =
      (std::max<size_t>(bytes, 1) + kGranularity - 1) / kGranularity * kGranularity;
  BRAID_ASSIGN_OR_RETURN(void* p, deviceAlloc(rounded));
  std::lock_guard<std::mutex> lock(shareableMu);
  (*shareables)[reinterpret_cast<uintptr_t>(p)] = rounded;
  return p;
}

bool isShareable(const void* p) {
  std::lock_guard<std::mutex> lock(shareableMu);
  return shareables->count(reinterpret_cast<uintptr_t>(p)) != 0;
}

Status shareableFree(void* p) {
  emu::makeContext();
  {
    std::lock_guard<std::mutex> lock(shareableMu);
    if (shareables->erase(reinterpret_cast<uintptr_t>(p)) == 0) {
      return Status(braidInvalidArgument,
                    "the pointer is not device memory from braidMemAllocDevice");
    }
  }
  return deviceFree(p);
}

Expected<int> shareableExport(const void* p, size_t* bytes) {
  uintptr_t base = 0;
  Allocation a;
  if (!isShareable(p) || !Allocations::get().holding(p, &base, &a)) {
    return Status(braidInvalidArgument, "only the start of braidMemAllocDevice's memory exports");
  }
  const int fd = fcntl(a.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return emulated(std::string("exporting a descriptor: ") + std::strerror(errno));
  *bytes = a.bytes;
  return fd;
}

Expected<void*> shareableImport(int fd, size_t bytes) {
  emu::makeContext();
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    return emulated("shareableImport: the descriptor is not an allocation of " +
                    std::to_string(bytes) + " bytes");
  }
  char* view = nullptr;
  void* p = emu::mapDevice(fd, bytes, &view);
  if (p == nullptr) return emulated(std::string("shareableImport: ") + std::strerror(errno));
  Allocations::get().add(p, Allocation{bytes, Region::kDevice, -1, true, view});
  return p;
}

Status shareableUnmap(void* p) {
  Allocation a;
  if (!Allocations::get().take(p, Region::kDevice, &a) || !a.mapped) {
    return Status(braidInvalidArgument, "the pointer is not a mapping from shareableImport");
  }
  emu::unmapDevice(p, a);
  return Status::ok();
}

// Devices 0 .. BRAID_EMU_DEVICES - 1 (one by default), each reaching the others' memory
// (it is all host memory), with streams and queues of their own (emulated_streams.cc).
Expected<int> currentDevice() { return emu::currentDeviceOfThread(); }
Status setCurrentDevice(int device) {
  if (device < 0 || device >= emu::deviceCount()) {
    return emulated("setCurrentDevice: no device " + std::to_string(device) +
                    " (BRAID_EMU_DEVICES)");
  }
  emu::currentDeviceOfThread() = device;
  emu::threadChoseDevice() = true;
  return Status::ok();
}

// Device d's bus id: entry d of BRAID_EMU_BUS_IDS (a comma-separated list, so a test
// can place its ranks on the GPUs of a topology file), else "000e:0d:00.0".
std::string boundDeviceBusId() {
  const int device = emu::currentDeviceOfThread();
  const bool bound = emu::threadChoseDevice() || (emu::devicesWithContext() >> device & 1u) != 0;
  if (!bound) return "";
  const char* list = getenv("BRAID_EMU_BUS_IDS");
  std::string ids = list != nullptr ? list : "";
  for (int i = 0; i < device && !ids.empty(); ++i) {
    const size_t comma = ids.find(',');
    ids = comma == std::string::npos ? "" : ids.substr(comma + 1);
  }
  if (!ids.empty()) return ids.substr(0, ids.find(','));
  char bus[16];
  std::snprintf(bus, sizeof(bus), "000e:%02x:00.0", device);
  return bus;
}

Status enablePeerAccess(int peer) {
  return peer >= 0 && peer < emu::deviceCount()
             ? Status::ok()
             : emulated("enablePeerAccess: no device " + std::to_string(peer));
}

Expected<DeviceUuid> deviceUuid(int device) {
  if (device < 0 || device >= emu::deviceCount()) {
    return emulated("no device " + std::to_string(device) + " (BRAID_EMU_DEVICES)");
  }
  DeviceUuid id{};
  std::memcpy(id.bytes, "braid-emulated-0", sizeof(id.bytes));
  id.bytes[15] = static_cast<unsigned char>('0' + device);
  return id;
}

}  // namespace braid::cuda
