// What a killed process leaves in /dev/shm goes at the next process's first shared-memory
// transport (transports/shm/shm_transport.h sweepDeadSegments), whatever launched it:
// segments of dead creators in this pid namespace go; a live creator's, another
// namespace's and another form's stay.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/shm_segment_name.h"
#include "core/transport.h"
#include "transports/shm/shm_transport.h"

namespace braid::transport::shm {
namespace {

bool present(const std::string& name) {  // name with its leading '/'
  struct stat st {};
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

// Runs `body` in a child that exits without cleaning up; returns the child's pid (reaped,
// so it no longer exists) and what the body wrote.
pid_t inChild(std::string* out, std::string (*body)()) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string text = body();
    const ssize_t w = write(fds[1], text.data(), text.size());
    _exit(w == static_cast<ssize_t>(text.size()) ? 0 : 1);  // no destructors: nothing unlinked
  }
  close(fds[1]);
  char buf[256];
  ssize_t got;
  while ((got = read(fds[0], buf, sizeof(buf))) > 0) out->append(buf, static_cast<size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// A region made and left behind (its object never destroyed): its name.
std::string leaveRegion() {
  Expected<std::unique_ptr<SharedRegion>> r = makeShmTransport()->createRegion(4096);
  if (!r.isOk()) return "";
  return std::move(r).value().release()->name();
}

// A segment with exactly this name (leading '/'), made by this process.
bool makeSegment(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return false;
  close(fd);
  return true;
}

TEST(ShmSweep, ADeadProcessesSegmentsGoAtTheNextProcesssFirstTransport) {
  (void)makeShmTransport();  // this process's own sweep, done before anything is left
  std::string left;
  const pid_t dead = inChild(&left, leaveRegion);
  ASSERT_GT(dead, 0);
  ASSERT_FALSE(left.empty());
  EXPECT_EQ(left.rfind("/" + shmSegmentPrefix(dead), 0), 0u) << left;
  ASSERT_TRUE(present(left)) << left;
  // Another of the dead pid's namespace-less or other-namespace names, and the old form.
  const std::string otherNs = "/braid-" + std::to_string(dead) + "-1-sweeptest";
  const std::string oldForm = "/braid-" + std::to_string(dead) + "-0123456789abcdef";
  ASSERT_TRUE(makeSegment(otherNs));
  ASSERT_TRUE(makeSegment(oldForm));
  // A live process's (this one's) region.
  Expected<std::unique_ptr<SharedRegion>> mine = makeShmTransport()->createRegion(4096);
  ASSERT_TRUE(mine.isOk());
  const std::string live = mine.value()->name();

  // A new process (this binary again, running only the helper below) makes its first.
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("SHM_SWEEP_HELPER", "1", 1);
    execl("/proc/self/exe", "shm_sweep_test", "--gtest_filter=ShmSweep.HelperMakesATransport",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(present(left)) << left << " should be gone";
  EXPECT_TRUE(present(live));
  EXPECT_TRUE(present(otherNs));
  EXPECT_TRUE(present(oldForm));
  EXPECT_EQ(sweepDeadSegments(), 0);  // nothing more of this namespace's dead
  shm_unlink(otherNs.c_str());
  shm_unlink(oldForm.c_str());
}

// Run by the test above in a new process; nothing on its own.
TEST(ShmSweep, HelperMakesATransport) {
  if (getenv("SHM_SWEEP_HELPER") == nullptr) GTEST_SKIP() << "a helper of the test above";
  EXPECT_NE(makeShmTransport(), nullptr);
}

TEST(ShmSweep, ASweepCountsWhatItRemovedAndLeavesTheLiving) {
  (void)makeShmTransport();  // swept now: the children, forked, do not sweep again
  std::string a, b;
  inChild(&a, leaveRegion);
  inChild(&b, leaveRegion);
  ASSERT_TRUE(present(a) && present(b));
  Expected<std::unique_ptr<SharedRegion>> mine = makeShmTransport()->createRegion(4096);
  ASSERT_TRUE(mine.isOk());
  EXPECT_GE(sweepDeadSegments(), 2);
  EXPECT_FALSE(present(a));
  EXPECT_FALSE(present(b));
  EXPECT_TRUE(present(mine.value()->name()));
}

}  // namespace
}  // namespace braid::transport::shm
