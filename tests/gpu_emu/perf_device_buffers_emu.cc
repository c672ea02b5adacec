// The perf tools' device buffers (perf/coll/perf_buffers.h) over the emulated GPU
// (tests/gpu_emu/emulated_gpu.h), in place of perf/coll/perf_device_buffers.cc's CUDA
// runtime: the *_perf_emu tools run -E 1 where there is no GPU, BRAID_EMU_DEVICES giving
// the devices, so CI checks how ranks map to devices and run on them. Test-only.
#include <algorithm>
#include <string>

#include "cuda/device.h"
#include "perf/coll/perf_buffers.h"

namespace braid::perf {
namespace {

constexpr size_t kAlign = 64;

bool ok(const Status& st) { return st.isOk(); }

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)cuda::deviceFree(data_);
}

bool DeviceBuffer::allocate(size_t bytes, size_t unalign, braidStream_t stream,
                            std::string* error) {
  bytes_ = bytes;
  unalign_ = unalign;
  Expected<void*> p = cuda::deviceAlloc(std::max(bytes + unalign, kAlign));
  Status st = p.status();
  if (st.isOk()) st = cuda::memsetAsync(p.value(), 0, std::max(bytes + unalign, kAlign), stream);
  if (st.isOk()) st = cuda::streamSynchronize(stream);
  if (!st.isOk()) {
    *error = st.message();
    return false;
  }
  data_ = static_cast<char*>(p.value());
  return mirror_.allocate(bytes);
}

bool DeviceBuffer::toDevice(char* dst, const char* src, size_t n, braidStream_t stream) {
  return ok(cuda::copyAsync(dst, src, n, stream)) && ok(cuda::streamSynchronize(stream));
}
bool DeviceBuffer::toHost(char* dst, const char* src, size_t n, braidStream_t stream) {
  return ok(cuda::copyAsync(dst, src, n, stream)) && ok(cuda::streamSynchronize(stream));
}
int DeviceBuffer::deviceCount(std::string* why) {
  const cuda::DeviceStatus& s = cuda::deviceStatus();
  if (s.count <= 0) *why = s.reason;
  return s.count;
}
bool DeviceBuffer::setDevice(int index) { return ok(cuda::setCurrentDevice(index)); }
bool DeviceBuffer::synchronize(braidStream_t stream) { return ok(cuda::streamSynchronize(stream)); }
braidStream_t DeviceBuffer::createStream() {
  Expected<void*> s = cuda::streamCreate();
  return s.isOk() ? static_cast<braidStream_t>(s.value()) : nullptr;
}
void DeviceBuffer::destroyStream(braidStream_t stream) {
  if (stream != nullptr) (void)cuda::streamDestroy(stream);
}
void* DeviceBuffer::capture(braidStream_t stream, void (*enqueue)(void*), void* arg) {
  if (!ok(cuda::streamBeginCapture(stream, true))) return nullptr;
  enqueue(arg);
  Expected<void*> graph = cuda::streamEndCapture(stream);
  return graph.isOk() ? graph.value() : nullptr;
}
bool DeviceBuffer::launch(void* graph, braidStream_t stream) {
  return ok(cuda::graphLaunch(graph, stream));
}
void DeviceBuffer::destroyGraph(void* graph) { (void)cuda::graphDestroy(graph); }

}  // namespace braid::perf
