// Two "hosts" as network namespaces joined by a veth pair, two ranks in each:
// ranks reach the other namespace over TCP on the veth addresses and their
// namespace-mate over shm. Needs root and iproute2; skips with the reason
// otherwise. Everything it creates is removed, also when it fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "spawn.h"

namespace braid::test {
namespace {

class Namespaces {
 public:
  Namespaces() : a_("braid" + std::to_string(getpid()) + "a"), b_("braid" + std::to_string(getpid()) + "b") {}
  ~Namespaces() {
    std::string out;
    runCommand("ip netns del " + a_ + "; ip netns del " + b_, &out);
  }
  // Creates both namespaces, the veth pair and the addresses; "" or the error.
  std::string create() {
    std::string out;
    const std::string va = "v" + std::to_string(getpid()) + "a", vb = "v" + std::to_string(getpid()) + "b";
    std::string cmd = "set -e; ip netns add " + a_ + "; ip netns add " + b_ +
                      "; ip link add " + va + " type veth peer name " + vb +
                      "; ip link set " + va + " netns " + a_ + "; ip link set " + vb + " netns " + b_ +
                      "; ip -n " + a_ + " addr add 10.77.0.1/24 dev " + va +
                      "; ip -n " + b_ + " addr add 10.77.0.2/24 dev " + vb +
                      "; ip -n " + a_ + " link set " + va + " up; ip -n " + b_ + " link set " + vb +
                      " up; ip -n " + a_ + " link set lo up; ip -n " + b_ + " link set lo up";
    return runCommand(cmd, &out) == 0 ? "" : out;
  }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

 private:
  std::string a_, b_;
};

TEST(NetworkNamespaces, TwoHostsOfTwoRanksAllReduceExactly) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
  std::string probe;
  if (runCommand("command -v ip", &probe) != 0) GTEST_SKIP() << "iproute2 (ip) is not installed";
  Namespaces ns;
  std::string err = ns.create();
  if (!err.empty()) GTEST_SKIP() << "cannot create network namespaces here: " << err;
  const std::string perf = std::string(BRAID_BIN_DIR) + "/perf/coll/all_reduce_perf -b 8 -e 4M -f 16 -n 3";
  const std::string common = "BRAID_WORLD_SIZE=4 BRAID_ROOT=10.77.0.1:" + std::to_string(freePort()) +
                             " BRAID_SECRET=" + randomHex() + " BRAID_TIMEOUT_MS=30000 BRAID_DEBUG=INFO ";
  std::string cmd;
  for (int r = 0; r < 4; ++r) {
    const std::string& where = r < 2 ? ns.a() : ns.b();
    cmd += "ip netns exec " + where + " env " + common + "BRAID_HOST_ID=" + where +
           " BRAID_RANK=" + std::to_string(r) + " " + perf + " > /tmp/" + where + "-" +
           std::to_string(r) + ".log 2>&1 & ";
  }
  cmd += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  std::string out;
  int rc = runCommand("bash -c '" + cmd + "'", &out);
  std::string rank0, rank1;
  runCommand("cat /tmp/" + ns.a() + "-0.log; rm -f /tmp/" + ns.a() + "-*.log /tmp/" + ns.b() + "-*.log", &rank0);
  EXPECT_EQ(rc, 0) << out << rank0;
  EXPECT_NE(rank0.find("# Out of bounds values : 0 OK"), std::string::npos) << rank0;
  EXPECT_NE(rank0.find("over socket"), std::string::npos) << rank0;  // across the veth
  EXPECT_NE(rank0.find("over shm"), std::string::npos) << rank0;     // inside the namespace
}

}  // namespace
}  // namespace braid::test
