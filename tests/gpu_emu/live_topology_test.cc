// A live communicator places its ranks on their GPUs: four ranks (threads of this
// process) each make one emulated GPU current before init, as an application
// binds a device before ncclCommInitRank; the emulated devices carry the bus ids of
// a DGX H100's first four GPUs (BRAID_EMU_BUS_IDS), and NVML is the fake library
// answering as a DGX H100 (BRAID_NVML_LIBRARY, BRAID_FAKE_NVML). The communicator's
// dump (BRAID_TOPO_DUMP_FILE) must put rank r on GPU r with NVLink between every
// pair (450 GB/s: 18 NVLink 4 links), braid-topo must show those ranks from the
// dump, and BRAID_DEBUG=INFO must log them. The node's CPU side is this machine's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "cuda/device.h"
#include "topo/paths.h"
#include "topo/xml.h"

namespace braid::test {
namespace {

constexpr int kRanks = 4;
constexpr const char* kBusIds = "0000:1B:00.0,0000:43:00.0,0000:52:00.0,0000:61:00.0";

std::string readAll(const std::string& path) {
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

TEST(LiveTopology, RanksSitOnTheirEmulatedGpusOverNvlink) {
  const std::string dir = ::testing::TempDir();
  const std::string dump = dir + "live_topology_" + std::to_string(getpid()) + ".xml";
  const std::string log = dir + "live_topology_" + std::to_string(getpid()) + ".log";
  // Before anything logs or discovers: both are read once per process.
  setenv("BRAID_DEBUG", "INFO", 1);
  setenv("BRAID_DEBUG_FILE", log.c_str(), 1);
  setenv("BRAID_EMU_DEVICES", "4", 1);
  setenv("BRAID_EMU_BUS_IDS", kBusIds, 1);
  setenv("BRAID_NVML_LIBRARY", BRAID_FAKE_NVML_PATH, 1);
  setenv("BRAID_FAKE_NVML", "dgx_h100", 1);
  setenv("BRAID_TOPO_DUMP_FILE", dump.c_str(), 1);
  unsetenv("BRAID_TOPO_FILE");

  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  std::vector<braidComm_t> comms(kRanks, nullptr);
  std::vector<braidResult_t> results(kRanks, braidInternalError);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      if (!cuda::setCurrentDevice(r).isOk()) return;
      results[r] = braidCommInitRank(&comms[r], kRanks, id, r);
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(results[r], braidSuccess) << "rank " << r;
  for (braidComm_t c : comms) EXPECT_EQ(braidCommDestroy(c), braidSuccess);

  Expected<topo::Topology> t = topo::loadXmlFile(dump);
  ASSERT_TRUE(t.isOk()) << t.status().message();
  ASSERT_EQ(t.value().nodes.size(), 1u);
  const topo::Node& node = t.value().nodes[0];
  ASSERT_EQ(node.gpus.size(), 8u);  // NVML's eight, added to this machine's (none)
  ASSERT_EQ(t.value().ranks.size(), static_cast<size_t>(kRanks));
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(t.value().ranks[r].gpu, r) << "rank " << r;
  EXPECT_EQ(node.gpus[3].busId, "0000:61:00.0");
  const topo::PathMatrix m = topo::pathMatrix(t.value(), t.value().ranks);
  for (int a = 0; a < kRanks; ++a) {
    for (int b = 0; b < kRanks; ++b) {
      if (a == b) continue;
      EXPECT_EQ(m.at(a, b).type, topo::LinkType::kNvlink) << a << "-" << b;
      EXPECT_DOUBLE_EQ(m.at(a, b).bandwidthGBps, 450.0) << a << "-" << b;
    }
  }

  const std::string shown =
      run("BRAID_TOPO_DUMP_FILE= BRAID_TOPO_FILE=" + dump + " " BRAID_TOPO_PATH " 2>&1");
  EXPECT_NE(shown.find("# ranks (as the communicator placed them)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("rank 3: node 0"), std::string::npos) << shown;
  EXPECT_NE(shown.find("GPU 3 0000:61:00.0 NVIDIA H100 80GB HBM3"), std::string::npos) << shown;
  EXPECT_NE(shown.find("NVL/450"), std::string::npos) << shown;

  const std::string logged = readAll(log);
  EXPECT_NE(logged.find("topology: rank 2: node 0"), std::string::npos) << logged;
  EXPECT_NE(logged.find("GPU 2 0000:52:00.0"), std::string::npos) << logged;
  EXPECT_NE(logged.find("topology: paths"), std::string::npos) << logged;
  EXPECT_NE(logged.find("NVML (" BRAID_FAKE_NVML_PATH ") lists 8 GPU(s)"), std::string::npos)
      << logged;
  std::remove(dump.c_str());
  std::remove(log.c_str());
}

}  // namespace
}  // namespace braid::test
