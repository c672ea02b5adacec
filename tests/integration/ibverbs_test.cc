// The ibverbs transport with real ranks: over an RDMA device where there is
// one (skips with the reason otherwise), and, everywhere, falling through to
// the next transport in BRAID_TRANSPORTS when no RDMA port can be used.
#include <gtest/gtest.h>
#include <dirent.h>

#include <string>

#include "spawn.h"
#include "transports/registry.h"

namespace braid::test {
namespace {

const std::string kPerf = std::string(BRAID_BIN_DIR) + "/perf/coll/all_reduce_perf";

bool builtWithIbverbs() {
  return transport::builtTransports().find("ibverbs") != std::string::npos;
}

bool haveRdmaDevice() {
  DIR* d = opendir("/sys/class/infiniband");
  if (d == nullptr) return false;
  bool any = false;
  while (dirent* e = readdir(d)) any = any || e->d_name[0] != '.';
  closedir(d);
  return any;
}

TEST(Ibverbs, AllReduceOverAnRdmaDevice) {
  if (!builtWithIbverbs()) GTEST_SKIP() << "built without rdma-core (libibverbs-dev)";
  if (!haveRdmaDevice()) GTEST_SKIP() << "no RDMA device in /sys/class/infiniband";
  std::string out;
  int rc = runCommand("BRAID_TRANSPORTS=ibverbs BRAID_DEBUG=INFO " + std::string(BRAIDRUN_PATH) +
                          " -n 2 " + kPerf + " -b 8 -e 16M -f 8 -n 3",
                      &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_NE(out.find("over ibverbs"), std::string::npos) << out;
}

TEST(Ibverbs, WithoutAUsablePortTheNextTransportTakesThePair) {
  if (!builtWithIbverbs()) GTEST_SKIP() << "built without rdma-core (libibverbs-dev)";
  // Where there is a device, an HCA filter that matches none stands in for "no device".
  std::string out;
  int rc = runCommand("BRAID_TRANSPORTS=ibverbs,socket BRAID_IB_HCA==no_such_hca BRAID_DEBUG=INFO " +
                          std::string(BRAIDRUN_PATH) + " -n 2 " + kPerf + " -b 8 -e 64K -f 8 -n 2",
                      &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_NE(out.find("ibverbs: not used"), std::string::npos) << out;
  EXPECT_NE(out.find("over socket"), std::string::npos) << out;
}

}  // namespace
}  // namespace braid::test
