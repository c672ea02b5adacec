// Device calls chosen by the cost model, and run as chosen, on live communicators over
// the emulated GPU: eight ranks (threads of this process), each on its own emulated GPU
// carrying the bus id of a GPU of a DGX H100 (NVLink from the fake NVML, as
// live_topology_test places them) or of a PCIe 8-GPU server (the shipped file through
// BRAID_TOPO_FILE: its PCIe switches and sockets, which hwloc would give). At one size in
// each band of the model's all-reduce choice, every rank must run the algorithm the cost
// model ranks first over the file's topology (rankAlgorithms: direct and two-shot on the
// windows, tree and ring lowered), counted by the executor that ran it, with exact sums;
// braidCommGetAlgorithm and BRAID_DEBUG=INFO must say the same, and at 1 GiB on the DGX
// the predicted ring busbw must be NCCL's ~370 GB/s within 15%.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "cuda/device.h"
#include "runtime/communicator.h"
#include "runtime/device/device_windows.h"
#include "select/cost_model.h"
#include "select/user_choice.h"
#include "tests/common/file_programs.h"
#include "topo/xml.h"

namespace braid::test {
namespace {

using algo::Algorithm;
using algo::Collective;

constexpr int kRanks = 8;
constexpr uint64_t kGiB = 1ull << 30;

std::string logPath() {
  return ::testing::TempDir() + "device_choice_" + std::to_string(getpid()) + ".log";
}

// Set before anything logs (read once per process) and kept for every test here.
void commonEnv() {
  setenv("BRAID_DEBUG", "INFO", 1);
  setenv("BRAID_DEBUG_FILE", logPath().c_str(), 1);
  setenv("BRAID_EMU_DEVICES", "8", 1);
  setenv("BRAID_CUDA_WINDOW_BYTES", "33554432", 1);  // 16 MiB halves: every call one round
  unsetenv("BRAID_ALGO");
  unsetenv("BRAID_CUDA_TWO_SHOT_BYTES");
}

struct Planned {
  uint64_t bytes;
  Algorithm algorithm;
  DeviceExecutor executor;
  std::string loaded;  // a loaded algorithm's name (then `algorithm` means nothing)
};

std::string nameOf(const Planned& e) {
  return e.loaded.empty() ? algo::algorithmName(e.algorithm) : e.loaded;
}

uint64_t ranOf(const DeviceWindows* w, const Planned& e) {
  if (w == nullptr) return 0;
  return e.loaded.empty() ? w->ran(e.executor, e.algorithm) : w->ranLoaded();
}

std::string topoFile(const char* name) { return std::string(BRAID_TOPO_DATA) + "/" + name; }

// The cost model's first choice over the shipped file, for each size.
std::vector<Planned> modelChoices(const char* file, const std::vector<uint64_t>& sizes) {
  const braid::Expected<topo::Topology> t = topo::loadXmlFile(topoFile(file));
  EXPECT_TRUE(t.isOk()) << t.status().message();
  std::vector<Planned> out;
  if (!t.isOk()) return out;
  const CostInputs in = costInputsFor(t.value(), kRanks, kRanks);
  for (uint64_t bytes : sizes) {
    const Algorithm a = rankAlgorithms(Collective::kAllReduce, bytes, in).front().first;
    const bool windows = a == Algorithm::kDirect || a == Algorithm::kTwoShot;
    out.push_back({bytes, a, windows ? DeviceExecutor::kWindows : DeviceExecutor::kLowered, ""});
  }
  return out;
}

// One rank: each all-reduce on its stream, checked exactly, and what ran counted.
struct RankResult {
  bool ok = false;
  size_t wrong = 0;
  std::vector<std::string> ran;       // per size: the algorithm its executor counted
  std::vector<std::string> reported;  // per size: braidCommGetAlgorithm
  double largeUs = 0;                 // braidCommGetAlgorithm's prediction at 1 GiB
  std::string large;
};

void runRank(const braidUniqueId& id, int rank, const std::vector<Planned>& plan, RankResult* out,
             std::vector<void*>* frees) {
  if (!cuda::setCurrentDevice(rank).isOk()) return;
  braidComm_t comm = nullptr;
  if (braidCommInitRank(&comm, kRanks, id, rank) != braidSuccess) return;
  Expected<void*> s = cuda::streamCreate();
  bool ok = s.isOk();
  for (const Planned& e : plan) {
    const size_t count = e.bytes / sizeof(float);
    Expected<void*> mem = cuda::deviceAlloc(2 * e.bytes);
    if (!ok || !mem.isOk()) return;
    frees->push_back(mem.value());
    float* send = static_cast<float*>(mem.value());
    float* recv = send + count;
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(rank + 1 + i % 5);
    const DeviceWindows* w = comm->deviceWindowsLive.load();
    const uint64_t before = ranOf(w, e);
    ok = cuda::copyAsync(send, host.data(), e.bytes, s.value()).isOk() &&
         braidAllReduce(send, recv, count, braidFloat32, braidSum, comm,
                        static_cast<braidStream_t>(s.value())) == braidSuccess &&
         cuda::copyAsync(host.data(), recv, e.bytes, s.value()).isOk() &&
         cuda::streamSynchronize(s.value()).isOk();
    for (size_t i = 0; i < count && ok; ++i) {
      const float sum = static_cast<float>(kRanks * (kRanks + 1) / 2 + kRanks * (i % 5));
      out->wrong += host[i] != sum ? 1 : 0;
    }
    w = comm->deviceWindowsLive.load();
    const bool counted = w != nullptr && ranOf(w, e) == before + 1;
    out->ran.push_back(counted ? nameOf(e) : "something else");
    const char* name = "";
    ok = ok && braidCommGetAlgorithm(comm, braidCollAllReduce, count, braidFloat32, &name,
                                     nullptr) == braidSuccess;
    out->reported.push_back(name);
  }
  const char* name = "";
  ok = ok && braidCommGetAlgorithm(comm, braidCollAllReduce, kGiB / 4, braidFloat32, &name,
                                   &out->largeUs) == braidSuccess;
  out->large = name;
  out->ok = ok;
  (void)cuda::streamDestroy(s.value());
  braidCommDestroy(comm);
}

// Runs `plan` on eight ranks and checks every rank ran and reported the model's choice.
void runPlan(const std::vector<Planned>& plan, std::vector<RankResult>* results) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  results->assign(kRanks, RankResult{});
  std::vector<std::vector<void*>> frees(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back(runRank, std::cref(id), r, std::cref(plan), &(*results)[r], &frees[r]);
  }
  for (std::thread& t : ranks) t.join();
  for (const std::vector<void*>& f : frees) {
    for (void* p : f) (void)cuda::deviceFree(p);  // once every rank's thread has returned
  }
  for (int r = 0; r < kRanks; ++r) {
    const RankResult& got = (*results)[r];
    ASSERT_TRUE(got.ok) << "rank " << r;
    EXPECT_EQ(got.wrong, 0u) << "rank " << r;
    ASSERT_EQ(got.ran.size(), plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
      const std::string want = nameOf(plan[i]);
      EXPECT_EQ(got.ran[i], want) << "rank " << r << ", " << plan[i].bytes << " bytes";
      EXPECT_EQ(got.reported[i], want) << "rank " << r << ", " << plan[i].bytes << " bytes";
    }
  }
}

std::string readLog() {
  std::ifstream f(logPath());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The plan's sizes cover every band: the windows' one-shot and two-shot, a lowered tree
// and a lowered ring.
void expectEveryBand(const std::vector<Planned>& plan) {
  std::set<Algorithm> seen;
  for (const Planned& e : plan) seen.insert(e.algorithm);
  EXPECT_EQ(seen, (std::set<Algorithm>{Algorithm::kDirect, Algorithm::kTwoShot, Algorithm::kTree,
                                       Algorithm::kRing}));
}

// The eight ranks on a DGX H100's GPUs, NVLink from the fake NVML.
void dgxEnv() {
  setenv("BRAID_EMU_BUS_IDS",
         "0000:1B:00.0,0000:43:00.0,0000:52:00.0,0000:61:00.0,0000:9D:00.0,0000:C3:00.0,"
         "0000:D1:00.0,0000:DF:00.0",
         1);
  setenv("BRAID_NVML_LIBRARY", BRAID_FAKE_NVML_PATH, 1);
  setenv("BRAID_FAKE_NVML", "dgx_h100", 1);
  unsetenv("BRAID_TOPO_FILE");
}

// Declared first: NVML is read once per process, and the PCIe test's BRAID_TOPO_FILE
// would keep discovery from running at all.
TEST(DeviceChoice, DgxH100RunsTheCostModelsChoicePerSize) {
  commonEnv();
  dgxEnv();
  const std::vector<Planned> plan =
      modelChoices("dgx_h100.xml", {8u << 10, 256u << 10, 4u << 20, 16u << 20});
  expectEveryBand(plan);
  std::vector<RankResult> results;
  runPlan(plan, &results);
  for (const RankResult& r : results) {
    EXPECT_EQ(r.large, "ring");
    const double busbw =
        2.0 * (kRanks - 1) / kRanks * static_cast<double>(kGiB) / (r.largeUs * 1e3);
    EXPECT_NEAR(busbw, 370.0, 0.15 * 370.0) << "predicted ring busbw at 1 GiB";
  }
  const std::string log = readLog();
  EXPECT_NE(log.find("cost model (GPU paths, for device calls)"), std::string::npos) << log;
  EXPECT_NE(log.find("allreduce of 4194304 bytes on device memory: tree lowered"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("allreduce of 262144 bytes on device memory: two_shot on the windows"),
            std::string::npos)
      << log;
}

TEST(DeviceChoice, PcieServerRunsTheCostModelsChoicePerSize) {
  commonEnv();
  setenv("BRAID_EMU_BUS_IDS",
         "0000:1A:00.0,0000:1B:00.0,0000:1C:00.0,0000:1D:00.0,0000:88:00.0,0000:89:00.0,"
         "0000:8A:00.0,0000:8B:00.0",
         1);
  const std::string file = topoFile("pcie_8gpu.xml");
  setenv("BRAID_TOPO_FILE", file.c_str(), 1);
  const std::vector<Planned> plan =
      modelChoices("pcie_8gpu.xml", {256u, 16u << 10, 256u << 10, 4u << 20});
  expectEveryBand(plan);
  std::vector<RankResult> results;
  runPlan(plan, &results);
  for (const RankResult& r : results) EXPECT_EQ(r.large, "ring");
  unsetenv("BRAID_TOPO_FILE");
}

// A 2x4 grid all-reduce loaded from a file competes on the live device path: where its
// walk over the DGX's GPU paths (priceProgramUs; one slot per send at these sizes) is
// below the model's best built-in, every rank runs it lowered, counted by ranLoaded(),
// exact, and braidCommGetAlgorithm and INFO name it; elsewhere the built-in runs.
TEST(DeviceChoice, DgxH100RunsALoadedAlgorithmWhereItIsCheapest) {
  commonEnv();
  dgxEnv();
  const algo::AlgoFile grid = test::allReduceFile("grid", test::gridAllReduce(2, 4));
  const std::string path =
      ::testing::TempDir() + "device_choice_grid_" + std::to_string(getpid()) + ".json";
  {
    std::ofstream f(path);
    f << algo::writeAlgoFile(grid);
  }
  setenv("BRAID_ALGO_FILES", path.c_str(), 1);
  const braid::Expected<topo::Topology> t = topo::loadXmlFile(topoFile("dgx_h100.xml"));
  ASSERT_TRUE(t.isOk()) << t.status().message();
  const CostInputs in = costInputsFor(t.value(), kRanks, kRanks);
  std::vector<Planned> plan;
  for (uint64_t bytes : {uint64_t{8} << 10, uint64_t{16} << 20}) {
    const auto best = rankAlgorithms(Collective::kAllReduce, bytes, in).front();
    const bool windows = best.first == Algorithm::kDirect || best.first == Algorithm::kTwoShot;
    plan.push_back({bytes, best.first,
                    windows ? DeviceExecutor::kWindows : DeviceExecutor::kLowered,
                    priceProgramUs(grid, bytes, in) < best.second ? "grid" : ""});
  }
  EXPECT_EQ(plan.front().loaded, "");     // the windows' one-shot wins small calls
  EXPECT_EQ(plan.back().loaded, "grid");  // the grid beats the ring at 16 MiB
  std::vector<RankResult> results;
  runPlan(plan, &results);
  const std::string log = readLog();
  EXPECT_NE(log.find("allreduce of 16777216 bytes on device memory: grid (loaded) lowered"),
            std::string::npos)
      << log;
  unsetenv("BRAID_ALGO_FILES");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace braid::test
