// Where a communicator's settings come from: braidConfig_t, then BRAID_*
// variables, then defaults; and how braidCommInitFromEnv reads the launchers'
// conventions (braidrun, torchrun, OpenMPI, Slurm).
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/config.h"

#include "braid/braid.h"
#include "core/bootstrap.h"
#include "core/comm.h"
#include "core/env.h"
#include "core/logging.h"
#include "exec/host/fifo_executor.h"

namespace braid {
namespace {

bool envInt(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0') return false;
  *out = static_cast<int>(x);
  return true;
}

// A stable 128-bit value from a string (FNV-1a, twice with different seeds).
Secret derivedSecret(const std::string& text) {
  Secret s{};
  for (int half = 0; half < 2; ++half) {
    uint64_t h = half == 0 ? 1469598103934665603ull : 0x9e3779b97f4a7c15ull;
    for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    std::memcpy(s.data() + 8 * half, &h, 8);
  }
  return s;
}

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

Expected<CommConfig> configFrom(const braidConfig_t* config, std::string* transports) {
  CommConfig cfg;
  cfg.timeoutMs = braid::envInt("BRAID_TIMEOUT_MS", 300000);
  cfg.sliceBytes = static_cast<size_t>(braid::envInt("BRAID_SHM_SLOT_BYTES", 128 << 10));
  cfg.slots = static_cast<int>(braid::envInt("BRAID_SHM_SLOTS", 8));
  cfg.spinUs = static_cast<int>(braid::envInt("BRAID_SPIN_US", 1000));
  cfg.yieldUs = static_cast<int>(braid::envInt("BRAID_YIELD_US", 2000));
  cfg.describeOp = &OpDesc::describeLabel;
  *transports = envString("BRAID_TRANSPORTS");
  if (config != nullptr) {
    if (config->size < offsetof(braidConfig_t, netName) + sizeof(const char*) ||
        config->magic != BRAID_CONFIG_MAGIC) {
      return invalidArgument("config was not initialised with BRAID_CONFIG_INITIALIZER "
                             "(size or magic is wrong)");
    }
    if (config->timeoutMs != BRAID_CONFIG_UNDEF_INT) {
      if (config->timeoutMs <= 0) return invalidArgument("config->timeoutMs must be > 0");
      cfg.timeoutMs = config->timeoutMs;
    }
    if (config->netName != nullptr) *transports = config->netName;
    if (config->blocking != BRAID_CONFIG_UNDEF_INT && config->blocking != 1) {
      return invalidArgument("config->blocking = 0 (non-blocking init) is not supported yet");
    }
  }
  if (cfg.sliceBytes < 4096 || cfg.sliceBytes > (64u << 20) || cfg.sliceBytes % 64 != 0) {
    return invalidArgument("BRAID_SHM_SLOT_BYTES must be a multiple of 64 in 4K..64M");
  }
  if (cfg.slots < 2 || cfg.slots > 256) return invalidArgument("BRAID_SHM_SLOTS must be 2..256");
  return cfg;
}

Status launcherRankAndSize(int* rank, int* nranks) {
  static const char* kPairs[][2] = {{"BRAID_RANK", "BRAID_WORLD_SIZE"},
                                    {"RANK", "WORLD_SIZE"},
                                    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                    {"PMI_RANK", "PMI_SIZE"},
                                    {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (auto& pair : kPairs) {
    if (envInt(pair[0], rank) && envInt(pair[1], nranks)) {
      if (*nranks < 1 || *rank < 0 || *rank >= *nranks) {
        return invalidArgument(std::string(pair[0]) + "=" + std::to_string(*rank) + " and " +
                               pair[1] + "=" + std::to_string(*nranks) + " are inconsistent");
      }
      return Status::ok();
    }
  }
  return invalidUsage("no rank in the environment: set BRAID_RANK and BRAID_WORLD_SIZE (braidrun "
                      "does), or run under torchrun, mpirun or srun");
}

// The rendezvous address and secret; rank 0 starts the root service there.
Expected<UniqueIdData> uniqueIdFromEnv(int rank, int nranks,
                                       std::shared_ptr<RootHandle>* service) {
  std::string root = envString("BRAID_ROOT");
  if (root.empty() && !envOr("MASTER_ADDR").empty() && !envOr("MASTER_PORT").empty()) {
    // The port after MASTER_PORT: torch's store (torchrun's agent, or
    // init_process_group) already listens on MASTER_PORT itself.
    int port = 0;
    if (!envInt("MASTER_PORT", &port) || port <= 0 || port >= 65535) {
      return invalidArgument("MASTER_PORT=" + envOr("MASTER_PORT") + " is not a port (1..65534)");
    }
    root = envOr("MASTER_ADDR") + ":" + std::to_string(port + 1);
  }
  std::string job = envOr("TORCHELASTIC_RUN_ID") + envOr("OMPI_MCA_ess_base_jobid") +
                    envOr("PMIX_NAMESPACE") + envOr("SLURM_JOB_ID") + "." +
                    envOr("SLURM_STEP_ID");
  if (root.empty()) {
    int localSize = -1;
    bool single = (envInt("OMPI_COMM_WORLD_LOCAL_SIZE", &localSize) && localSize == nranks) ||
                  envOr("SLURM_NNODES") == "1";
    if (!single) {
      return invalidUsage("no rendezvous address: set BRAID_ROOT=host:port to a port on the host "
                          "of rank 0 (or MASTER_ADDR and MASTER_PORT)");
    }
    // One node: a port derived from the job, so every rank agrees without help.
    Secret h = derivedSecret(job);
    root = "127.0.0.1:" + std::to_string(20000 + (h[0] | (h[1] << 8)) % 20000);
  }
  BRAID_ASSIGN_OR_RETURN(SockAddr addr, parseHostPort(root));
  UniqueIdData id;
  id.root = addr;
  std::string secretHex = envString("BRAID_SECRET");
  if (!secretHex.empty()) {
    BRAID_ASSIGN_OR_RETURN(id.secret, secretFromHex(secretHex));
  } else {
    BRAID_INFO("no BRAID_SECRET: the bootstrap secret is derived from the job's environment; "
               "set BRAID_SECRET to 32 random hex digits on every rank to keep strangers out");
    id.secret = derivedSecret(root + "/" + job + "/" + std::to_string(nranks));
  }
  if (rank == 0) {
    // Listen on every address at the root's port: the name in BRAID_ROOT may
    // resolve to an address other processes see differently.
    SockAddr any;
    any.storage.ss_family = addr.family();
    any.len = addr.len;
    any.setPort(addr.port());
    SockAddr bound;
    BRAID_ASSIGN_OR_RETURN(*service, startRootService(any, id.secret,
                                                   braid::envInt("BRAID_TIMEOUT_MS", 300000),
                                                   &bound));
  }
  return id;
}

}  // namespace braid
