// Several "hosts" on one machine: two network namespaces joined by a veth
// pair, each with its own address and BRAID_HOST_ID, two ranks in each. Ranks
// reach the other namespace over the network transport under test (socket or
// ucx) and their namespace-mate over shm. Needs root and iproute2; skips with
// the reason otherwise. Everything it creates (namespaces, veth, logs) is
// removed by destructors, also when an assertion fails.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/net.h"
#include "transports/registry.h"
#include "spawn.h"

namespace braid::test {
namespace {

const char* const kCollectives[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                    "reduce",     "alltoall",   "gather",         "scatter",
                                    "sendrecv"};

// Two namespaces a and b, veth va (in a) <-> vb (in b), IPv4 10.77.0.1/.2 or
// IPv6 fd77::1/::2. Removed on destruction.
class Namespaces {
 public:
  Namespaces()
      : a_("braid" + std::to_string(getpid()) + "a"),
        b_("braid" + std::to_string(getpid()) + "b"),
        va_("v" + std::to_string(getpid()) + "a"),
        vb_("v" + std::to_string(getpid()) + "b") {}
  ~Namespaces() {
    std::string out;
    runCommand("ip netns del " + a_ + "; ip netns del " + b_, &out);
  }
  // Creates both namespaces, the veth pair and the addresses; "" or the error.
  std::string create(bool ipv6) {
    std::string out;
    std::string addrA = ipv6 ? "-6 addr add fd77::1/64 nodad" : "addr add 10.77.0.1/24";
    std::string addrB = ipv6 ? "-6 addr add fd77::2/64 nodad" : "addr add 10.77.0.2/24";
    std::string cmd = "set -e; ip netns add " + a_ + "; ip netns add " + b_ + "; ip link add " +
                      va_ + " type veth peer name " + vb_ + "; ip link set " + va_ + " netns " +
                      a_ + "; ip link set " + vb_ + " netns " + b_ + "; ip -n " + a_ + " " +
                      addrA + " dev " + va_ + "; ip -n " + b_ + " " + addrB + " dev " + vb_ +
                      "; ip -n " + a_ + " link set " + va_ + " up; ip -n " + b_ + " link set " +
                      vb_ + " up; ip -n " + a_ + " link set lo up; ip -n " + b_ + " link set lo up";
    return runCommand(cmd, &out) == 0 ? "" : out;
  }
  // Rate and delay on both ends (tc netem); false when the kernel lacks netem.
  bool shape(const std::string& rate, const std::string& delay) {
    std::string out;
    return runCommand("ip netns exec " + a_ + " tc qdisc add dev " + va_ + " root netem rate " +
                          rate + " delay " + delay + " && ip netns exec " + b_ +
                          " tc qdisc add dev " + vb_ + " root netem rate " + rate + " delay " +
                          delay, &out) == 0;
  }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

 private:
  std::string a_, b_, va_, vb_;
};

// A private directory for rank logs, removed with everything in it.
class LogDir {
 public:
  LogDir() {
    char tmpl[] = "/tmp/braid-netns-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "/tmp";
  }
  ~LogDir() {
    std::string out;
    if (path_ != "/tmp") runCommand("rm -rf " + path_, &out);
  }
  std::string log(int rank) const { return path_ + "/" + std::to_string(rank) + ".log"; }
  std::string read(int rank) const {
    std::string out;
    runCommand("cat " + log(rank), &out);
    return out;
  }

 private:
  std::string path_;
};

// Skips the test unless namespaces can be made here; returns what to skip for.
std::string cannotMakeNamespaces() {
  std::string probe;
  if (geteuid() != 0) return "needs root to create network namespaces";
  if (runCommand("command -v ip", &probe) != 0) return "iproute2 (ip) is not installed";
  return "";
}

bool haveUcx() { return transport::builtTransports().find("ucx") != std::string::npos; }

// The shell lines that start 4 ranks (0, 1 in a; 2, 3 in b) of `command` in
// the background, each logging to its file; $pids holds their pids.
std::string startRanks(const Namespaces& ns, const LogDir& logs, const std::string& root,
                       const std::string& env, const std::string& command) {
  std::string common = "BRAID_WORLD_SIZE=4 BRAID_ROOT=" + root + " BRAID_SECRET=" + randomHex() +
                       " BRAID_TIMEOUT_MS=30000 BRAID_DEBUG=INFO " + env + " ";
  std::string cmd = "pids=; ";
  for (int r = 0; r < 4; ++r) {
    const std::string& where = r < 2 ? ns.a() : ns.b();
    cmd += "ip netns exec " + where + " env " + common + "BRAID_HOST_ID=" + where +
           " BRAID_RANK=" + std::to_string(r) + " " + command + " > " + logs.log(r) +
           " 2>&1 & pids=\"$pids $!\"; ";
  }
  return cmd;
}

// Runs every collective's perf program with checking on across the two
// namespaces; each rank-0 log must report no wrong values.
void everyCollective(const Namespaces& ns, const std::string& root, const std::string& env,
                     const char* overWhat, const char* alsoSays) {
  for (const char* coll : kCollectives) {
    SCOPED_TRACE(coll);
    LogDir logs;
    const std::string perf = std::string(BRAID_BIN_DIR) + "/perf/coll/" + coll +
                             "_perf -b 8 -e 2M -f 64 -n 2 -c 1";
    std::string cmd = startRanks(ns, logs, root + std::to_string(freePort()), env, perf) +
                      "fail=0; for p in $pids; do wait $p || fail=1; done; exit $fail";
    std::string out;
    int rc = runCommand("timeout 120 bash -c '" + cmd + "'", &out);
    std::string rank0 = logs.read(0);
    EXPECT_EQ(rc, 0) << out << rank0 << logs.read(2);
    EXPECT_NE(rank0.find("# Out of bounds values : 0 OK"), std::string::npos) << rank0;
    EXPECT_NE(rank0.find(overWhat), std::string::npos) << rank0;  // across the veth
    EXPECT_NE(rank0.find("over shm"), std::string::npos) << rank0;  // inside the namespace
    EXPECT_NE(rank0.find(alsoSays), std::string::npos) << rank0;
  }
}

TEST(NetworkNamespaces, EveryCollectiveOverStripedSockets) {
  if (std::string why = cannotMakeNamespaces(); !why.empty()) GTEST_SKIP() << why;
  Namespaces ns;
  if (std::string err = ns.create(false); !err.empty()) GTEST_SKIP() << "no namespaces: " << err;
  everyCollective(ns, "10.77.0.1:", "BRAID_SOCKET_NSOCKS=3", "over socket", ": 3 stream(s)");
}

TEST(NetworkNamespaces, EveryCollectiveOverUcxOnAShapedLink) {
  if (std::string why = cannotMakeNamespaces(); !why.empty()) GTEST_SKIP() << why;
  if (!haveUcx()) GTEST_SKIP() << "this build has no ucx transport (install libucx-dev)";
  Namespaces ns;
  if (std::string err = ns.create(false); !err.empty()) GTEST_SKIP() << "no namespaces: " << err;
  if (!ns.shape("10gbit", "50us")) std::printf("tc netem unavailable: the link is unshaped\n");
  // UCX's own shared-memory transports would see one machine: keep it on tcp.
  everyCollective(ns, "10.77.0.1:", "BRAID_NET=ucx UCX_TLS=tcp,self", "over ucx", "over ucx");
}

TEST(NetworkNamespaces, SocketsOverIpv6) {
  if (std::string why = cannotMakeNamespaces(); !why.empty()) GTEST_SKIP() << why;
  Namespaces ns;
  if (std::string err = ns.create(true); !err.empty()) GTEST_SKIP() << "no IPv6 namespaces: " << err;
  LogDir logs;
  const std::string perf = std::string(BRAID_BIN_DIR) + "/perf/coll/all_reduce_perf -b 8 -e 1M -f 32 -n 2";
  std::string cmd = startRanks(ns, logs, "[fd77::1]:" + std::to_string(freePort()), "", perf) +
                    "fail=0; for p in $pids; do wait $p || fail=1; done; exit $fail";
  std::string out;
  int rc = runCommand("timeout 120 bash -c '" + cmd + "'", &out);
  std::string rank0 = logs.read(0);
  EXPECT_EQ(rc, 0) << out << rank0;
  EXPECT_NE(rank0.find("# Out of bounds values : 0 OK"), std::string::npos) << rank0;
  EXPECT_NE(rank0.find("peers connect to [fd77::1]"), std::string::npos) << rank0;
  EXPECT_NE(rank0.find("over socket"), std::string::npos) << rank0;
}

// Run inside a namespace by InterfaceChoiceInsideANamespace (it sets
// BRAID_NETNS_EXPECT): the interface chosen without a spec is the veth.
TEST(InNamespace, LoopbackIsNotChosenWhenAnotherInterfaceIsUp) {
  const char* expect = getenv("BRAID_NETNS_EXPECT");
  if (expect == nullptr) GTEST_SKIP() << "runs inside a namespace, from the test below";
  Expected<SockAddr> chosen = chooseInterfaceAddress("");
  ASSERT_TRUE(chosen.isOk()) << chosen.status().message();
  EXPECT_EQ(chosen.value().toString().rfind(expect, 0), 0u) << chosen.value().toString();
  Expected<SockAddr> lo = chooseInterfaceAddress("=lo");
  ASSERT_TRUE(lo.isOk());
  EXPECT_EQ(lo.value().toString().rfind("127.0.0.1", 0), 0u) << lo.value().toString();
  EXPECT_FALSE(chooseInterfaceAddress("^lo,v").isOk());  // nothing left
}

TEST(NetworkNamespaces, InterfaceChoiceInsideANamespace) {
  if (std::string why = cannotMakeNamespaces(); !why.empty()) GTEST_SKIP() << why;
  for (bool v6 : {false, true}) {
    Namespaces ns;
    if (std::string err = ns.create(v6); !err.empty()) GTEST_SKIP() << "no namespaces: " << err;
    std::string out;
    int rc = runCommand("ip netns exec " + ns.b() + " env BRAID_NETNS_EXPECT=" +
                            (v6 ? "[fd77::2]" : "10.77.0.2") + " /proc/" +
                            std::to_string(getpid()) + "/exe --gtest_filter=InNamespace.*",
                        &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
  }
}

// OpenMPI's mpirun, started in namespace a, reaches "host" b through an rsh
// agent that enters b: ranks 0-1 run in a, 2-3 in b, and Braid reads rank and
// size from OpenMPI's variables.
TEST(NetworkNamespaces, OpenMpiMpirunAcrossTwoHosts) {
  if (std::string why = cannotMakeNamespaces(); !why.empty()) GTEST_SKIP() << why;
  std::string probe;
  if (runCommand("command -v mpirun.openmpi", &probe) != 0) {
    GTEST_SKIP() << "no mpirun.openmpi (openmpi-bin)";
  }
  Namespaces ns;
  if (std::string err = ns.create(false); !err.empty()) GTEST_SKIP() << "no namespaces: " << err;
  LogDir logs;
  const std::string agent = logs.log(99) + ".sh";
  std::string out;
  ASSERT_EQ(runCommand("printf '#!/bin/sh\\nhost=$1; shift\\nns=" + ns.a() +
                           "; [ \"$host\" = 10.77.0.2 ] && ns=" + ns.b() +
                           "\\nexec ip netns exec $ns sh -c \"$*\"\\n' > " + agent +
                           " && chmod +x " + agent,
                       &out),
            0)
      << out;
  const std::string perf = std::string(BRAID_BIN_DIR) + "/perf/coll/all_reduce_perf";
  std::string cmd = "ip netns exec " + ns.a() +
                    " env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 "
                    "mpirun.openmpi --host 10.77.0.1:2,10.77.0.2:2 -np 4 --mca plm_rsh_agent " +
                    agent + " --mca oob_tcp_if_include 10.77.0.0/24 -x BRAID_ROOT=10.77.0.1:" +
                    std::to_string(freePort()) + " -x BRAID_SECRET=" + randomHex() +
                    " -x BRAID_DEBUG=INFO -x BRAID_TIMEOUT_MS=30000 sh -c "
                    "'BRAID_HOST_ID=$(ip netns identify) exec " + perf + " -b 8 -e 1M -f 32 -n 2'";
  int rc = runCommand(cmd, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_NE(out.find("#  Rank  3 Group  0"), std::string::npos) << out;
  EXPECT_NE(out.find("over socket"), std::string::npos) << out;
  EXPECT_NE(out.find("over shm"), std::string::npos) << out;
}

// MPICH's hydra, started in namespace a, reaches "host" b through its ssh launcher
// replaced by an agent that enters b (hydra passes ssh options such as -x before the
// host). Braid reads rank and size from PMI_RANK and PMI_SIZE; hydra's variables name no
// job, so BRAID_ROOT gives the rendezvous.
TEST(NetworkNamespaces, MpichMpiexecAcrossTwoHosts) {
  if (std::string why = cannotMakeNamespaces(); !why.empty()) GTEST_SKIP() << why;
  std::string probe;
  if (runCommand("command -v mpiexec.hydra", &probe) != 0) {
    GTEST_SKIP() << "no mpiexec.hydra (mpich)";
  }
  Namespaces ns;
  if (std::string err = ns.create(false); !err.empty()) GTEST_SKIP() << "no namespaces: " << err;
  LogDir logs;
  const std::string agent = logs.log(99) + ".sh";
  std::string out;
  ASSERT_EQ(runCommand("printf '#!/bin/sh\\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\\n"
                       "host=$1; shift\\nns=" + ns.a() + "; [ \"$host\" = 10.77.0.2 ] && ns=" +
                           ns.b() + "\\nexec ip netns exec $ns sh -c \"$*\"\\n' > " + agent +
                           " && chmod +x " + agent,
                       &out),
            0)
      << out;
  const std::string perf = std::string(BRAID_BIN_DIR) + "/perf/coll/all_reduce_perf";
  std::string cmd = "cd /tmp && ip netns exec " + ns.a() +
                    " timeout -k 5 120 mpiexec.hydra -hosts 10.77.0.1:2,10.77.0.2:2 -n 4 "
                    "-launcher ssh -launcher-exec " + agent + " -iface v" +
                    std::to_string(getpid()) + "a -genv BRAID_ROOT 10.77.0.1:" +
                    std::to_string(freePort()) + " -genv BRAID_SECRET " + randomHex() +
                    " -genv BRAID_DEBUG INFO -genv BRAID_TIMEOUT_MS 30000 sh -c "
                    "'BRAID_HOST_ID=$(ip netns identify) exec " + perf + " -b 8 -e 1M -f 32 -n 2'";
  int rc = runCommand(cmd, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_NE(out.find("#  Rank  3 Group  0"), std::string::npos) << out;
  EXPECT_NE(out.find("2 node(s) x 2 rank(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("over socket"), std::string::npos) << out;
  EXPECT_NE(out.find("over shm"), std::string::npos) << out;
}

// Kills namespace b's ranks in the middle of a long run: a's ranks must end
// with an error naming a lost rank, by themselves (the harness's own kill
// after 120 s would show as a signal), not hang.
void killOneHost(const std::string& env, const char* transport) {
  if (std::string why = cannotMakeNamespaces(); !why.empty()) GTEST_SKIP() << why;
  Namespaces ns;
  if (std::string err = ns.create(false); !err.empty()) GTEST_SKIP() << "no namespaces: " << err;
  LogDir logs;
  const std::string perf = std::string(BRAID_BIN_DIR) + "/perf/coll/all_reduce_perf -b 1M -e 1M -n 100000 -w 0";
  std::string cmd =
      startRanks(ns, logs, "10.77.0.1:" + std::to_string(freePort()), env, perf) +
      "for i in $(seq 600); do grep -q \"over " + transport + "\" " + logs.log(0) +
      " && break; sleep 0.05; done; sleep 0.3; ip netns pids " + ns.b() +
      " | xargs -r kill -9; set -- $pids; " +
      "wait $1; echo \"rank0=$?\"; wait $2; echo \"rank1=$?\"; wait $3; wait $4; true";
  std::string out;
  runCommand("timeout 120 bash -c '" + cmd + "'", &out);
  std::string rank0 = logs.read(0), rank1 = logs.read(1);
  EXPECT_NE(rank0.find("over " + std::string(transport)), std::string::npos) << rank0;
  EXPECT_NE(out.find("rank0=1"), std::string::npos) << out << rank0;
  EXPECT_NE(out.find("rank1=1"), std::string::npos) << out << rank1;
  for (const std::string& log : {rank0, rank1}) {
    bool named = log.find("rank 2 (pid") != std::string::npos ||
                 log.find("rank 3 (pid") != std::string::npos;
    EXPECT_TRUE(named) << "the error must name a lost rank:\n" << log;
    EXPECT_NE(log.find("is gone"), std::string::npos) << log;
  }
}

TEST(NetworkNamespaces, KillingOneHostFailsTheOtherOverSocket) { killOneHost("", "socket"); }

TEST(NetworkNamespaces, KillingOneHostFailsTheOtherOverUcx) {
  if (!haveUcx()) GTEST_SKIP() << "this build has no ucx transport (install libucx-dev)";
  killOneHost("BRAID_NET=ucx UCX_TLS=tcp,self", "ucx");
}

}  // namespace
}  // namespace braid::test
