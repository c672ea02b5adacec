// all_reduce_perf started the ways users start jobs: braidrun (both
// transports), torchrun-style variables, and OpenMPI's mpirun.
#include <gtest/gtest.h>

#include <string>

#include "spawn.h"

namespace braid::test {
namespace {

const std::string kPerf = std::string(BRAID_BIN_DIR) + "/perf/coll/all_reduce_perf";

void expectCleanTable(int rc, const std::string& out) {
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_NE(out.find("# Avg bus bandwidth"), std::string::npos) << out;
}

TEST(Launchers, BraidrunOverShmAndSocket) {
  for (const char* transport : {"shm", "socket"}) {
    std::string out;
    int rc = runCommand(std::string("BRAID_TRANSPORTS=") + transport + " " + BRAIDRUN_PATH +
                            " -n 4 " + kPerf + " -b 8 -e 4M -f 8 -n 5",
                        &out);
    SCOPED_TRACE(transport);
    expectCleanTable(rc, out);
    EXPECT_NE(out.find("#  Rank  3 Group  0"), std::string::npos) << out;
  }
}

TEST(Launchers, TorchrunStyleVariables) {
  int port = freePort();
  std::string common = "WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
                       " BRAID_SECRET=" + randomHex() + " ";
  std::string cmd = "(" + common + "RANK=1 " + kPerf + " -b 1K -e 64K -f 4 -n 3 >/dev/null & " +
                    common + "RANK=2 " + kPerf + " -b 1K -e 64K -f 4 -n 3 >/dev/null & " +
                    common + "RANK=0 " + kPerf + " -b 1K -e 64K -f 4 -n 3; rc=$?; wait; exit $rc)";
  std::string out;
  int rc = runCommand(cmd, &out);
  expectCleanTable(rc, out);
  EXPECT_NE(out.find("#  Rank  2 Group  0"), std::string::npos) << out;
}

TEST(Launchers, OpenMpiMpirun) {
  std::string probe;
  if (runCommand("command -v mpirun.openmpi || command -v mpirun", &probe) != 0) {
    GTEST_SKIP() << "OpenMPI's mpirun is not installed (scripts/setup.sh installs openmpi-bin)";
  }
  std::string out;
  int rc = runCommand(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -n 3 " +
          kPerf + " -b 1K -e 64K -f 4 -n 3",
      &out);
  expectCleanTable(rc, out);
}

}  // namespace
}  // namespace braid::test
