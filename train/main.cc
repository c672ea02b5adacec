// braid-train: trains the reference GPT on Braid; see "The training stack" in
// docs/architecture.md and `braid-train --help`.
#include <braid/braid.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "train/config.h"
#include "train/trainer.h"

namespace {

constexpr const char* kUsage =
    "usage: braidrun -n N braid-train [options]\n"
    "       braid-train compare a.jsonl b.jsonl [--rtol 1e-4]\n"
    "       braid-train compare-params a.params b.params [--atol 1e-4]\n"
    "layout:    --dp D --tp T --pp P --ep E (product = ranks) --zero 0|1\n"
    "           --pp-schedule gpipe|1f1b --micro-batches M --global-batch G\n           --bucket-kb K (gradient buckets, default 256)\n"
    "model:     --model micro|tiny|small [--moe --experts 4 --top-k 2 --moe-every 1|2\n"
    "           --capacity-factor C (0: dropless)]\n"
    "training:  --steps S --seed N --lr 3e-3 --warmup 10 --clip 1 --weight-decay 0.01\n"
    "           --data FILE (default: the fortunes corpus)\n"
    "output:    --log-json run.jsonl --save PREFIX --resume PREFIX --dump-params FILE --quiet\n           --log-every N (print every N-th step)\n"
    "           --trace DIR (BRAID_TRACE: every rank's calls, a marker per step; braid-trace)\n";

// Whether a launcher (braidrun, torchrun, mpirun, MPICH's mpiexec, srun) started this process.
bool launched() {
  for (const char* v : {"BRAID_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace braid::train;
  if (argc >= 2 && std::strcmp(argv[1], "compare") == 0) return compareLogs(argc - 2, argv + 2);
  if (argc >= 2 && std::strcmp(argv[1], "compare-params") == 0) {
    return compareParams(argc - 2, argv + 2);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  TrainConfig cfg;
  std::string error;
  if (!parseTrainArgs(args, &cfg, &error)) {
    std::fprintf(stderr, "braid-train: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  // Before the first communicator: each traces from its init (runtime reads BRAID_TRACE there).
  if (!cfg.trace.empty()) setenv("BRAID_TRACE", cfg.trace.c_str(), 1);
  braidComm_t world = nullptr;
  if (!launched()) {
    // Run directly, without a launcher: a job of one rank.
    braidUniqueId id;
    if (braidGetUniqueId(&id) != braidSuccess || braidCommInitRank(&world, 1, id, 0) != braidSuccess) {
      std::fprintf(stderr, "braid-train: cannot start one rank: %s\n", braidGetLastError(nullptr));
      return 1;
    }
  } else if (braidCommInitFromEnv(&world, nullptr) != braidSuccess) {
    std::fprintf(stderr, "braid-train: cannot join the job: %s\n", braidGetLastError(nullptr));
    return 1;
  }
  int code = 0;
  {
    Trainer trainer(cfg, world);
    if (std::string e = trainer.init(); !e.empty()) {
      std::fprintf(stderr, "braid-train: %s\n", e.c_str());
      code = 2;
    } else {
      code = trainer.run();
    }
  }
  braidCommDestroy(world);
  return code;
}
