#include "core/env.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace braid {

const std::vector<EnvVar>& envTable() {
  static const std::vector<EnvVar> table = {
      {"BRAID_DEBUG", "NCCL_DEBUG", "WARN", "log level: NONE, VERSION, WARN, INFO, TRACE"},
      {"BRAID_DEBUG_FILE", "NCCL_DEBUG_FILE", nullptr,
       "write the log to this file instead of stderr; %h = host, %p = pid"},
      {"BRAID_TIMEOUT_MS", nullptr, "300000",
       "deadline of every wait (bootstrap, connection, collective) in milliseconds"},
      {"BRAID_TRANSPORTS", nullptr, "shm,socket",
       "transports allowed, in order of preference; 'socket' forces TCP on one node"},
      {"BRAID_NET", nullptr, nullptr,
       "network transport that fills the 'socket' entry of BRAID_TRANSPORTS: socket, ucx, ib"},
      {"BRAID_IB_HCA", "NCCL_IB_HCA", nullptr,
       "RDMA devices for ibverbs: 'mlx5_0:1,mlx5_1' prefixes with optional port, ^ excludes, = "
       "exact"},
      {"BRAID_IB_GID_INDEX", "NCCL_IB_GID_INDEX", nullptr,
       "GID index on RoCE ports (default: RoCE v2 with an IPv4 address, then global IPv6)"},
      {"BRAID_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", nullptr,
       "interfaces for bootstrap and socket transport: prefix list, ^ excludes, = exact"},
      {"BRAID_HOST_ID", "NCCL_HOSTID", nullptr,
       "identity of this node (default: host name + boot id); ranks with equal ids use shm"},
      {"BRAID_RANK", nullptr, nullptr, "this process's rank (braidCommInitFromEnv)"},
      {"BRAID_WORLD_SIZE", nullptr, nullptr, "number of ranks (braidCommInitFromEnv)"},
      {"BRAID_LOCAL_RANK", nullptr, nullptr, "rank among the ranks of this node (set by braidrun)"},
      {"BRAID_ROOT", nullptr, nullptr, "host:port of the rendezvous served by rank 0"},
      {"BRAID_SECRET", nullptr, nullptr,
       "hex secret every bootstrap connection presents (set by braidrun)"},
      {"BRAID_SHM_SLOT_BYTES", nullptr, "131072", "bytes per slot of a shared-memory FIFO"},
      {"BRAID_SHM_SLOTS", nullptr, "8", "slots per shared-memory FIFO (one per peer direction)"},
      {"BRAID_SHM_CMA", nullptr, "1",
       "1: a shm receiver may copy a private send buffer straight from the sender's memory "
       "(process_vm_readv), where the system allows it and the cost model prices it cheaper; "
       "0: every byte goes through the shared-memory FIFOs"},
      {"BRAID_SHM_CMA_MIN_BYTES", nullptr, nullptr,
       "smallest read the shm FIFOs and windows hand over by single copy (BRAID_SHM_CMA); unset: priced "
       "from the probe at init"},
      {"BRAID_SHM_WINDOW_BYTES", nullptr, "1048576",
       "bytes per rank one round of a direct algorithm moves through the node's shared windows "
       "(each rank maps 4x this from every peer); 0 turns the windows off"},
      {"BRAID_CUDA_IPC", nullptr, "1",
       "0: device buffers of ranks on one node are staged through host memory instead of "
       "read from the peers' device windows (CUDA IPC)"},
      {"BRAID_CUDA_WINDOW_BYTES", nullptr, nullptr,
       "bytes of device memory per rank that peers on the node map (CUDA IPC), two halves; "
       "larger calls go in rounds of a half (default 134217728, or 2097152 for windows a "
       "send/recv makes on a 2-rank communicator)"},
      {"BRAID_CUDA_P2P_SLOT_BYTES", nullptr, "4194304",
       "bytes of each of the two send/recv slots per peer in every device window (at least "
       "4096); the ranks' values must agree, else every call is staged"},
      {"BRAID_CUDA_TWO_SHOT_BYTES", nullptr, nullptr,
       "set: a device all-reduce on the windows is two-shot (reduce a slice, then gather) "
       "from this many bytes with 3 or more ranks, one-shot below, whatever the cost model "
       "says, ranks sharing one GPU included (default: the cost model's choice over the GPU "
       "paths; without GPU figures, two-shot from 1048576 on several GPUs)"},
      {"BRAID_CUDA_GRAPH_BYTES", nullptr, "8388608",
       "bytes of each device window kept for calls captured into a CUDA graph: a captured "
       "collective that fits runs there with 2 barriers rather than 3 (at most a half; 0: "
       "none, every captured collective runs in the halves)"},
      {"BRAID_CUDA_WAITS", nullptr, "stream",
       "how a device call waits for a peer's barrier or slot: 'stream' (a stream memory "
       "wait) or 'kernel' (a one-thread kernel polling the word, which does not hold back "
       "other streams sharing a hardware queue of the context; experimental, for ranks that "
       "are threads of one process)"},
      {"BRAID_SOCKET_SLOT_BYTES", nullptr, "262144", "bytes per slot of a socket FIFO"},
      {"BRAID_SOCKET_SLOTS", nullptr, "8", "slots per socket FIFO"},
      {"BRAID_SOCKET_NSOCKS", "NCCL_NSOCKS_PERTHREAD", nullptr,
       "TCP streams per peer pair, frames striped over them (default 2 to other nodes, 1 on "
       "this one; NCCL's value is multiplied by NCCL_SOCKET_NTHREADS; at most 16)"},
      {"BRAID_SOCKET_BUF_BYTES", nullptr, "4194304",
       "kernel buffer per TCP stream and direction, where net.core.[rw]mem_max allow it"},
      {"BRAID_SPIN_US", nullptr, "1000",
       "microseconds a wait spins before it yields the core (0 when ranks outnumber cores)"},
      {"BRAID_YIELD_US", nullptr, "2000",
       "microseconds a wait yields (sched_yield) before it blocks in the kernel"},
      {"BRAID_REDUCE_ISA", nullptr, nullptr,
       "force the reduction kernels' build: 'generic' (default: AVX2+F16C when the CPU has it)"},
      // No NCCL_ALGO fallback: its values (NVLS, CollnetDirect...) are not Braid's.
      // No NCCL_TOPO_* fallbacks: NCCL's topology XML is a different format.
      {"BRAID_TOPO_FILE", nullptr, nullptr,
       "load the topology from this XML file instead of discovering it (braid-topo)"},
      {"BRAID_TOPO_DUMP_FILE", nullptr, nullptr,
       "write the topology Braid uses to this XML file (a communicator's: with its ranks)"},
      {"BRAID_NVML_LIBRARY", nullptr, "libnvidia-ml.so.1",
       "NVML library opened at run time for NVLink discovery (absent: no NVLink information)"},
      {"BRAID_SCHEDULE_DUMP", nullptr, nullptr,
       "append every schedule a call builds, as JSON, to <value>.<pid>.json (one step per "
       "line, for reading and diffing)"},
      {"BRAID_DUMP_SIGNAL", nullptr, nullptr,
       "signal that prints every communicator's in-flight operation to stderr (default "
       "SIGUSR1 when the program does not handle it; 0 turns it off); braid-info --dump PID "
       "sends it"},
      {"BRAID_TRACE", nullptr, nullptr,
       "record every call and its steps and write a Chrome trace (Perfetto) per rank and "
       "communicator into this directory at destroy, abort, BRAID_DUMP_SIGNAL and the first "
       "error (braid-trace merges and reports)"},
      {"BRAID_TRACE_EVENTS", nullptr, "4096",
       "events each rank's trace keeps per communicator: the last N (a ring, 88 B each; a "
       "larger ring costs calls more, as its writes evict their data from the caches)"},
      {"BRAID_NVTX", nullptr, "0",
       "1: NVTX ranges (named as NCCL's) on host calls too; device calls have them whenever "
       "an NVTX library (libnvToolsExt.so.1, or NVTX_INJECTION64_PATH's) loads"},
      {"BRAID_CHECK", nullptr, "0",
       "1: before each collective the ranks compare their calls (collective, count, type, op, "
       "root) and fail alike, naming both, when they differ"},
      {"BRAID_TUNING_FILE", nullptr, nullptr,
       "price algorithms with this braid-tune file (measured alpha, beta and per-algorithm fits)"},
      {"BRAID_ALGO", nullptr, nullptr,
       "force algorithms: 'ring', 'allreduce:ring,tree', "
       "'allreduce:0-64k:tree#allreduce:64k-inf:ring', '^tree'; a loaded algorithm by "
       "collective and name: 'allreduce:my2d'"},
      {"BRAID_ALGO_FILES", nullptr, nullptr,
       "schedule files (docs/algorithms.md) every communicator loads at init, separated by "
       "':' (JSON, or MSCCL's XML where a file starts with '<'); each is proven by the simulator for the communicator's rank count or init fails"},
  };
  return table;
}

namespace {

const EnvVar* findVar(const char* name) {
  for (const EnvVar& v : envTable()) {
    if (std::strcmp(v.name, name) == 0) return &v;
  }
  return nullptr;
}

}  // namespace

std::string envString(const char* name) {
  if (const char* v = std::getenv(name); v != nullptr) return v;
  const EnvVar* var = findVar(name);
  if (var == nullptr) return "";
  if (var->fallback != nullptr) {
    if (const char* v = std::getenv(var->fallback); v != nullptr) return v;
  }
  return var->defaultValue ? var->defaultValue : "";
}

int64_t parseSize(const std::string& text) {
  if (text.empty()) return -1;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || v < 0) return -1;
  int64_t mult = 1;
  if (*end != '\0') {
    switch (std::toupper(static_cast<unsigned char>(*end))) {
      case 'K':
        mult = int64_t{1} << 10;
        break;
      case 'M':
        mult = int64_t{1} << 20;
        break;
      case 'G':
        mult = int64_t{1} << 30;
        break;
      default:
        return -1;
    }
    ++end;
    if (*end == 'B' || *end == 'b') ++end;
    if (*end != '\0') return -1;
  }
  if (v > INT64_MAX / mult) return -1;
  return static_cast<int64_t>(v) * mult;
}

int64_t envInt(const char* name, int64_t fallback) {
  std::string s = envString(name);
  if (s.empty()) return fallback;
  int64_t v = parseSize(s);
  return v < 0 ? fallback : v;
}

}  // namespace braid
