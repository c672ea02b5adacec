// perfMain: flags, the ranks (perf_world), a thread per -t (perf_worker), the
// exit status. The shape follows nccl-tests' common.cu.
#include "perf/coll/perf_common.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perf/coll/perf_args.h"
#include "perf/coll/perf_buffers.h"
#include "perf/coll/perf_devices.h"
#include "perf/coll/perf_report.h"
#include "perf/coll/perf_worker.h"
#include "perf/coll/perf_world.h"

namespace braid::perf {
namespace {

// This process's rank as the launcher announced it, for messages printed
// before the communicator exists; -1 when no launcher variable is set.
int launcherRank() {
  for (const char* var :
       {"BRAID_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return -1;
}

// This process's place among the job's processes on its node, as the launcher announced
// it (0 when none did: one process per node).
int launcherLocalRank() {
  for (const char* var : {"BRAID_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                          "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

[[noreturn]] void fatal(const PerfCollective& coll, const std::string& what) {
  std::fprintf(stderr, "%s: rank %d: %s\n", coll.name, std::max(launcherRank(), 0), what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

// Runs the threads of this process; their exit status.
int runThreads(const PerfCollective& coll, const PerfArgs& args, PerfWorld* world, JsonReport* json,
               std::vector<std::unique_ptr<PerfWorker>>* workers) {
  const int threads = world->layout().nThreads;
  for (int t = 0; t < threads; ++t) {
    const bool rankZero = world->layout().proc == 0 && t == 0;
    workers->push_back(
        std::make_unique<PerfWorker>(coll, args, world, t, rankZero ? json : nullptr));
  }
  std::vector<int> status(static_cast<size_t>(threads), 0);
  std::vector<std::thread> running;
  for (int t = 1; t < threads; ++t) {
    running.emplace_back([&, t] { status[static_cast<size_t>(t)] = (*workers)[t]->run(); });
  }
  status[0] = (*workers)[0]->run();
  for (std::thread& th : running) th.join();
  for (int s : status) {
    if (s != 0) return s;
  }
  return 0;
}

}  // namespace

int perfMain(int argc, char** argv, const PerfCollective& coll) {
  setlinebuf(stdout);
  PerfArgs args;
  std::string error;
  bool ok = parsePerfArgs(argc, argv, &args, &error);
  const bool quiet = launcherRank() > 0;  // one copy of usage text, not one per rank
  if (!ok || args.help) {
    if (quiet) return ok ? 0 : 1;
    if (ok) {
      std::printf("usage: %s [options]\n%s", coll.name, perfUsage());
    } else {
      std::fprintf(stderr, "%s: %s (see %s -h)\n", coll.name, error.c_str(), coll.name);
    }
    return ok ? 0 : 1;
  }
  if (!args.algo.empty() && coll.algoCollective == nullptr) {
    if (!quiet) {
      std::fprintf(stderr, "%s: -A %s: there is no algorithm to choose for %s\n", coll.name,
                   args.algo.c_str(), coll.name);
    }
    return 1;
  }
  if (args.timeoutSec > 0.0) {
    std::string ms = std::to_string(static_cast<long long>(args.timeoutSec * 1000.0 + 0.5));
    setenv("BRAID_TIMEOUT_MS", ms.c_str(), 1);
  }
  // Before the communicators: they read BRAID_ALGO once, at init.
  if (!args.algo.empty()) setenv("BRAID_ALGO", algoSpec(coll.algoCollective, args.algo).c_str(), 1);
  JsonReport json;
  const bool wantJson = !args.jsonPath.empty() && launcherRank() <= 0;
  if (wantJson && !json.start(args.jsonPath, argc, argv)) return 1;
  DeviceLayout devices;
  devices.localProc = launcherLocalRank();
  devices.nThreads = args.nThreads;
  devices.nGpus = args.nGpus;
  devices.share = args.shareGpu != 0;
  // Before any communicator: a rank without a device fails its process at once (and the
  // launcher ends the job), not its peers at their first call's timeout.
  if (args.deviceBuffers != 0) {
    std::string why;
    const int count = DeviceBuffer::deviceCount(&why);
    error = checkDevices(devices, count);
    if (!error.empty()) fatal(coll, why.empty() ? error : error + " (" + why + ")");
  }
  PerfWorld world;
  if (!world.create(devices, &error)) fatal(coll, error);
  if (!args.parallelInit && !world.initRanks(0, world.layout().perProc(), &error)) {
    fatal(coll, error);
  }
  std::vector<std::unique_ptr<PerfWorker>> workers;
  const int status = runThreads(coll, args, &world, wantJson ? &json : nullptr, &workers);
  if (!world.destroy(&error)) fatal(coll, error);
  return status;
}

}  // namespace braid::perf
