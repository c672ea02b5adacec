// all_reduce_perf started the ways users start jobs: braidrun (both
// transports), torchrun-style variables, and OpenMPI's mpirun.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

// Torch's store holds MASTER_PORT under torchrun: Braid's root takes the next port.
TEST(Launchers, TorchrunStyleVariablesWhileTorchsStoreHoldsMasterPort) {
  // A free port whose successor (Braid's root) is free too.
  const auto bindAt = [](int fd, int port) {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<uint16_t>(port));
    at.sin_addr.s_addr = htonl(INADDR_ANY);
    return bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof(at)) == 0;
  };
  int port = 0;
  for (int attempt = 0; attempt < 50 && port == 0; ++attempt) {
    int p = freePort();
    int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p < 65535 && bindAt(probe, p + 1)) port = p;
    close(probe);
  }
  ASSERT_NE(port, 0);
  int store = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(bindAt(store, port));
  ASSERT_EQ(listen(store, 4), 0);
  std::string common = "WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
                       " BRAID_TIMEOUT_MS=60000 BRAID_SECRET=" + randomHex() + " ";
  std::string cmd = "(" + common + "RANK=1 " + kPerf + " -b 1K -e 64K -f 4 -n 3 >/dev/null & " +
                    common + "RANK=2 " + kPerf + " -b 1K -e 64K -f 4 -n 3 >/dev/null & " +
                    common + "RANK=0 " + kPerf + " -b 1K -e 64K -f 4 -n 3; rc=$?; wait; exit $rc)";
  std::string out;
  int rc = runCommand(cmd, &out);
  close(store);
  expectCleanTable(rc, out);
  EXPECT_NE(out.find("#  Rank  2 Group  0"), std::string::npos) << out;
}

TEST(Launchers, OpenMpiMpirun) {
  std::string probe;
  // Debian installs MPICH too, and `mpirun` may be either: name OpenMPI's.
  if (runCommand("command -v mpirun.openmpi", &probe) != 0) {
    GTEST_SKIP() << "OpenMPI's mpirun is not installed (scripts/setup.sh installs openmpi-bin)";
  }
  std::string out;
  int rc = runCommand(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi --oversubscribe "
      "-n 3 " +
          kPerf + " -b 1K -e 64K -f 4 -n 3",
      &out);
  expectCleanTable(rc, out);
}

TEST(Tools, BraidInfoListsTheBuildAndEveryVariable) {
  const std::string info = std::string(BRAID_BIN_DIR) + "/tools/braid_info/braid-info";
  std::string out;
  ASSERT_EQ(runCommand(info, &out), 0) << out;
  EXPECT_NE(out.find("reduction kernels:"), std::string::npos) << out;
  EXPECT_NE(out.find("hierarchical"), std::string::npos) << out;
  ASSERT_EQ(runCommand("BRAID_TIMEOUT_MS=1234 " + info + " --env", &out), 0) << out;
  for (const char* var : {"BRAID_TIMEOUT_MS", "BRAID_TRANSPORTS", "BRAID_ALGO", "BRAID_SPIN_US",
                          "BRAID_SOCKET_IFNAME", "BRAID_TOPO_FILE"}) {
    EXPECT_NE(out.find(var), std::string::npos) << var;
  }
  EXPECT_NE(out.find("1234"), std::string::npos) << out;  // the value set here
  EXPECT_EQ(runCommand(info + " --bogus", &out), 2);
}

}  // namespace
}  // namespace braid::test
