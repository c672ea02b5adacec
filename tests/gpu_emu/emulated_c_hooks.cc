// C entry points of the emulated GPU for tests outside C++ (the Python package's device
// tests load libbraid_emu.so through BRAID_LIBRARY): device memory, a synchronous copy,
// streams and a gate that holds one back, each returning 0 or braidUnhandledCudaError with the
// emulation's message on stderr. Test-only: libbraid_emu.so is never installed.
#include <cstdint>
#include <cstdio>

#include "braid/braid.h"
#include "cuda/device.h"

namespace {

int report(const braid::Status& st) {
  if (st.isOk()) return braidSuccess;
  std::fprintf(stderr, "%s\n", st.message().c_str());
  return st.code();
}

}  // namespace

extern "C" {

int braidEmuMalloc(void** ptr, size_t bytes) {
  braid::Expected<void*> p = braid::cuda::deviceAlloc(bytes);
  if (!p.isOk()) return report(p.status());
  *ptr = p.value();
  return braidSuccess;
}

int braidEmuFree(void* ptr) { return report(braid::cuda::deviceFree(ptr)); }

// Copies between any two kinds of memory after the NULL stream's work, and waits.
int braidEmuMemcpy(void* dst, const void* src, size_t bytes) {
  braid::Status st = braid::cuda::copyAsync(dst, src, bytes, nullptr);
  if (st.isOk()) st = braid::cuda::streamSynchronize(nullptr);
  return report(st);
}

int braidEmuStreamCreate(void** stream) {
  braid::Expected<void*> s = braid::cuda::streamCreate();
  if (!s.isOk()) return report(s.status());
  *stream = s.value();
  return braidSuccess;
}

int braidEmuStreamSynchronize(void* stream) {
  return report(braid::cuda::streamSynchronize(stream));
}

int braidEmuStreamDestroy(void* stream) { return report(braid::cuda::streamDestroy(stream)); }

// A gate: *word (8 bytes of pinned memory from braidEmuPinnedAlloc) holds back the
// stream's later work until the host stores a value >= `value` there.
int braidEmuPinnedAlloc(void** ptr, size_t bytes) {
  braid::Expected<void*> p = braid::cuda::pinnedAlloc(bytes);
  if (!p.isOk()) return report(p.status());
  *ptr = p.value();
  return braidSuccess;
}

int braidEmuStreamWaitValue(void* stream, void* word, uint64_t value) {
  return report(braid::cuda::streamWaitValue64(stream, word, value));
}

}  // extern "C"
