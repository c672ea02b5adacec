// runtime/shared_memory.cc: braidCommRegister's sharing of host pages, on a 1-rank communicator
// (which buffers are re-backed by shared memory, and that neither deregistration nor a
// fork lets that sharing reach memory it should not: another mapping put where a freed
// buffer was, a forked child's writes), and braidMemAllocDevice's refusals.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "braid/braid.h"
#include "cuda/device.h"

namespace {

class Registration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    braidUniqueId id;
    ASSERT_EQ(braidGetUniqueId(&id), braidSuccess) << braidGetLastError(nullptr);
    ASSERT_EQ(braidCommInitRank(&comm_, 1, id, 0), braidSuccess) << braidGetLastError(nullptr);
  }
  static void TearDownTestSuite() {
    if (comm_ != nullptr) {
      EXPECT_EQ(braidCommDestroy(comm_), braidSuccess);
    }
    comm_ = nullptr;
  }
  static braidComm_t comm_;
};

braidComm_t Registration::comm_ = nullptr;

// The /proc/self/maps line naming the page under `p` ("" when unmapped).
std::string mappingOf(const void* p) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == nullptr) return "";
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string found;
  char line[512];
  while (found.empty() && fgets(line, sizeof(line), f) != nullptr) {
    unsigned long start = 0, end = 0;
    if (sscanf(line, "%lx-%lx", &start, &end) == 2 && start <= at && at < end) found = line;
  }
  fclose(f);
  return found;
}

// A caller who frees a registered buffer before deregistering it is in the
// wrong, but the memory placed at that address since is not Braid's: the
// deregistration must leave it as it is (not put private pages in its place).
TEST_F(Registration, DeregisterLeavesMemoryMappedOverAFreedBufferAlone) {
  constexpr size_t kBytes = 256 << 10;
  void* buf = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(buf, MAP_FAILED);
  std::memset(buf, 0x11, kBytes);
  void* handle = nullptr;
  ASSERT_EQ(braidCommRegister(comm_, buf, kBytes, &handle), braidSuccess);
  ASSERT_NE(mappingOf(buf).find("/dev/shm/braid-"), std::string::npos) << mappingOf(buf);
  ASSERT_EQ(munmap(buf, kBytes), 0);
  // Memory shared with other processes now lies there (as a fork would see it).
  void* again = mmap(buf, kBytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(again, buf);
  std::memset(again, 0x77, kBytes);
  EXPECT_EQ(braidCommDeregister(comm_, handle), braidSuccess);
  const auto* bytes = static_cast<const uint8_t*>(again);
  size_t wrong = 0;
  for (size_t i = 0; i < kBytes; ++i) wrong += bytes[i] != 0x77;
  EXPECT_EQ(wrong, 0u) << "deregistration wrote over memory mapped after the buffer was freed";
  const std::string now = mappingOf(again);
  EXPECT_NE(now.find("rw-s"), std::string::npos) << "no longer the shared mapping: " << now;
  EXPECT_EQ(now.find("/dev/shm/braid-"), std::string::npos) << now;
  munmap(again, kBytes);

  // Freed and nothing mapped there: deregistration maps nothing either.
  buf = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(buf, MAP_FAILED);
  ASSERT_EQ(braidCommRegister(comm_, buf, kBytes, &handle), braidSuccess);
  ASSERT_NE(mappingOf(buf).find("/dev/shm/braid-"), std::string::npos) << mappingOf(buf);
  ASSERT_EQ(munmap(buf, kBytes), 0);
  EXPECT_EQ(braidCommDeregister(comm_, handle), braidSuccess);
  // Unmapped, or someone else's memory: ASan's allocator may map into the hole at any
  // time, even while this test reads /proc/self/maps. Pages put back by a deregistration
  // would hold the buffer's contents (0x11 all over its first page).
  const std::string after = mappingOf(buf);
  if (!after.empty()) {
    EXPECT_EQ(after.find("/dev/shm/braid-"), std::string::npos) << after;
    const auto* first = static_cast<const uint8_t*>(buf);
    size_t kept = 0;
    for (size_t i = 0; i < 4096; ++i) kept += first[i] == 0x11;
    EXPECT_LT(kept, 4096u) << "deregistration put the buffer's pages back: " << after;
  }
}

// Registration re-backs whole pages only: a buffer sharing its first or last
// page with other data stays private (another thread's write there during the
// re-backing would be lost), and is registered all the same.
TEST_F(Registration, RegisterSharesOnlyBuffersOfWholePages) {
  constexpr size_t kPage = 4096;
  void* mem = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  char* base = static_cast<char*>(mem);
  void* handle = nullptr;
  ASSERT_EQ(braidCommRegister(comm_, base + 64, 2 * kPage, &handle), braidSuccess);
  EXPECT_EQ(mappingOf(base + kPage).find("/dev/shm"), std::string::npos) << mappingOf(base);
  EXPECT_EQ(braidCommDeregister(comm_, handle), braidSuccess);
  ASSERT_EQ(braidCommRegister(comm_, base + kPage, 2 * kPage + 8, &handle), braidSuccess);
  EXPECT_EQ(mappingOf(base + kPage).find("/dev/shm"), std::string::npos) << mappingOf(base);
  EXPECT_EQ(braidCommDeregister(comm_, handle), braidSuccess);
  ASSERT_EQ(braidCommRegister(comm_, base + kPage, 2 * kPage, &handle), braidSuccess);
  EXPECT_NE(mappingOf(base + kPage).find("/dev/shm/braid-"), std::string::npos)
      << mappingOf(base + kPage);
  EXPECT_EQ(mappingOf(base).find("/dev/shm"), std::string::npos) << "the page before is shared";
  EXPECT_EQ(mappingOf(base + 3 * kPage).find("/dev/shm"), std::string::npos)
      << "the page after is shared";
  EXPECT_EQ(braidCommDeregister(comm_, handle), braidSuccess);
  munmap(mem, 4 * kPage);
}

// A child forked while a buffer is registered gets the buffer as private
// memory would give it: what the child writes there stays in the child.
TEST_F(Registration, ForkedChildWritesToARegisteredBufferStayInTheChild) {
  constexpr size_t kBytes = 64 << 10;
  void* mem = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* bytes = static_cast<uint8_t*>(mem);
  std::memset(bytes, 0x11, kBytes);
  void* handle = nullptr;
  ASSERT_EQ(braidCommRegister(comm_, mem, kBytes, &handle), braidSuccess);
  ASSERT_NE(mappingOf(mem).find("/dev/shm/braid-"), std::string::npos) << mappingOf(mem);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::memset(bytes, 0x22, kBytes);
    bool own = bytes[0] == 0x22 && bytes[kBytes - 1] == 0x22;
    _exit(own ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  size_t changed = 0;
  for (size_t i = 0; i < kBytes; ++i) changed += bytes[i] != 0x11;
  EXPECT_EQ(changed, 0u) << "the child's writes reached the parent's registered buffer";
  // The parent's registration is intact: still shared, deregistered as usual.
  EXPECT_NE(mappingOf(mem).find("/dev/shm/braid-"), std::string::npos) << mappingOf(mem);
  EXPECT_EQ(braidCommDeregister(comm_, handle), braidSuccess);
  EXPECT_EQ(bytes[kBytes / 2], 0x11);
  munmap(mem, kBytes);
}

// braidMemAllocDevice: bad arguments are refused, *ptr untouched; without a GPU the error
// says why and points at braidMemAlloc. (Tests/integration's CudaMemory allocates.)
TEST(ApiMemory, MemAllocDeviceRefusesBadArgumentsAndSaysWhyWithoutADevice) {
  void* const untouched = reinterpret_cast<void*>(uintptr_t{0x1234});
  void* p = untouched;
  EXPECT_EQ(braidMemAllocDevice(nullptr, 64), braidInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(nullptr)).find("ptr is NULL"), std::string::npos);
  EXPECT_EQ(braidMemAllocDevice(&p, 0), braidInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(nullptr)).find("size is 0"), std::string::npos);
  EXPECT_EQ(p, untouched);
  if (braid::cuda::compiled() && braid::cuda::hasDevice()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(braidMemAllocDevice(&p, 64), braidUnhandledCudaError);
  const std::string msg = braidGetLastError(nullptr);
  EXPECT_NE(msg.find("braidMemAllocDevice"), std::string::npos) << msg;
  EXPECT_NE(msg.find("braidMemAlloc gives host memory"), std::string::npos) << msg;
  EXPECT_EQ(p, untouched);
  int local = 0;  // not Braid's: refused, not freed
  EXPECT_EQ(braidMemFree(&local), braidInvalidArgument);
}

}  // namespace
