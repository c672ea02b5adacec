// Making, finishing and freeing a communicator: its transports and Comm, the merged
// topology and the selector priced on it, its host executors; the device state is made by
// its first device call (runtime/device_calls.h) and freed here on its device.
#include "runtime/communicator.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "core/env.h"
#include "core/logging.h"
#include "cuda/device.h"
#include "exec/host/shared_windows_layout.h"
#include "exec/reduce.h"
#include "runtime/communicator_ops.h"
#include "runtime/config.h"
#include "runtime/device_calls.h"
#include "runtime/dump.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"
#include "runtime/shared_memory.h"
#include "runtime/tracing.h"
#include "select/cost_model.h"
#include "runtime/user_algorithms.h"
#include "select/tuning.h"
#include "topo/view.h"
#include "transports/registry.h"

namespace braid {
namespace {

Expected<std::vector<std::unique_ptr<Transport>>> makeTransports(
    const std::string& list, const transport::TransportHints& hints) {
  std::vector<std::unique_ptr<Transport>> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string name = list.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!name.empty()) {
      BRAID_ASSIGN_OR_RETURN(std::unique_ptr<Transport> t, transport::makeTransport(name, hints));
      out.push_back(std::move(t));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) return invalidArgument("BRAID_TRANSPORTS names no transport");
  return out;
}

void logCostInputs(const Comm& c, const CostInputs& in, const char* what) {
  if (c.rank() != 0) return;
  BRAID_INFO(
      "cost model (%s%s): %d node(s) x %d rank(s); intra %.2f us %.1f GB/s, inter %.2f us "
      "%.1f GB/s",
      in.source.c_str(), what, in.nodes, in.ranksPerNode, in.intra.alphaUs, in.intra.gbps,
      in.inter.alphaUs, in.inter.gbps);
}

// The communicator's merged topology, and the selector pricing algorithms on
// it (with BRAID_TUNING_FILE's measurements when set).
Status setUpSelector(braidComm& h, const std::string& transportList) {
  const Comm& c = *h.comm;
  std::vector<topo::RankView> views;
  for (int r = 0; r < c.nranks(); ++r) {
    const PeerInfo& p = c.peer(r);
    views.push_back({c.nodeOf()[r], p.hostId, p.hostName, p.place, p.nodeBlob});
  }
  BRAID_ASSIGN_OR_RETURN(h.topology, topo::mergeViews(views, c.rank()));
  // Every input must be the same on every rank, or ranks would pick different
  // algorithms: the busiest machine's rank count, not this rank's machine's.
  std::map<std::string, int> perMachine;
  int sharing = 0;
  for (int r = 0; r < c.nranks(); ++r)
    sharing = std::max(sharing, ++perMachine[c.peer(r).hostName]);
  // Host calls run on the CPUs whatever GPU a rank has bound, so the selector prices
  // the ranks as host ranks; their GPU places serve the topology's readers.
  std::vector<topo::RankPlace> hostPlaces = h.topology.places;
  for (topo::RankPlace& p : hostPlaces) p.gpu = -1;
  CostInputs in = costInputsFor(h.topology.topology, hostPlaces, sharing);
  in.sharedWindows = c.nodes() == 1 && c.nranks() > 1 && transportList.rfind("shm", 0) == 0 &&
                     envInt("BRAID_SHM_WINDOW_BYTES", 1 << 20) > 0;
  if (in.sharedWindows) in.windowLineBytes = windows::kLineBytes;
  const std::string tuningFile = envString("BRAID_TUNING_FILE");
  if (!tuningFile.empty()) {
    BRAID_ASSIGN_OR_RETURN(Tuning tuning, Tuning::load(tuningFile));
    const std::string intra = transportList.rfind("shm", 0) == 0 ? "shm" : "socket";
    in = applyTuning(std::move(in), tuning, intra);
  }
  BRAID_ASSIGN_OR_RETURN(AlgoPolicy policy, AlgoPolicy::parse(envString("BRAID_ALGO")));
  logCostInputs(c, in, "");
  // Device calls run over the GPUs' paths: priced there when every rank sits on a GPU.
  h.deviceFigures = !h.topology.places.empty();
  for (const topo::RankPlace& p : h.topology.places) h.deviceFigures &= p.gpu >= 0;
  if (h.deviceFigures) {
    CostInputs gpu = costInputsFor(h.topology.topology, h.topology.places);
    gpu.source = "GPU paths";
    logCostInputs(c, gpu, ", for device calls");
    h.deviceSelector = Selector(policy, std::move(gpu));
  } else {
    h.deviceSelector = Selector(policy, CostInputs{});
  }
  h.selector = Selector(std::move(policy), std::move(in));
  return Status::ok();
}

// Waits for operations queued on streams to finish.
void drain(braidComm* comm) {
  while (comm->inflight.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

// BRAID_TRACE's file, as the communicator goes.
void writeTrace(braidComm* comm, const char* why) {
  if (comm->comm->trace() == nullptr) return;
  Status st = writeTraceFile(comm, why);
  if (!st.isOk()) BRAID_WARN("%s", st.message().c_str());
}

// Frees comm, once nothing runs on it, with its CUDA device current (runtime/device_calls.h).
void freeComm(braidComm* comm) {
  dropRegistrations(comm);
  deleteOnItsDevice(comm);
}

// The smallest send posted by single copy (CommConfig::singleCopyMinBytes):
// BRAID_SHM_CMA_MIN_BYTES, else priced from the probe of the first transport
// that has one. Probes only where a rank has peers.
Expected<uint64_t> singleCopyMinBytes(const std::vector<std::unique_ptr<Transport>>& transports,
                                      int nranks) {
  const std::string forced = envString("BRAID_SHM_CMA_MIN_BYTES");
  const int64_t forcedBytes = forced.empty() ? 0 : parseSize(forced);
  if (forcedBytes < 0) {
    return invalidArgument("BRAID_SHM_CMA_MIN_BYTES=" + forced +
                           " is not a size (bytes, or with K, M or G)");
  }
  if (nranks < 2) return UINT64_MAX;
  const SingleCopyProbe* probe = nullptr;
  for (const auto& t : transports) {
    if ((probe = t->singleCopyProbe()) != nullptr) break;
  }
  if (probe == nullptr) return UINT64_MAX;
  const uint64_t bytes = forced.empty() ? singleCopyMinBytes(*probe) : forcedBytes;
  if (bytes == UINT64_MAX) {
    BRAID_INFO("shm: single-copy reads cost more than the two copies they replace here; not used");
  } else {
    BRAID_INFO("shm: sends of %llu bytes and up go by single copy where a peer allows it (%s)",
               static_cast<unsigned long long>(bytes),
               forced.empty() ? "priced from the probe" : "BRAID_SHM_CMA_MIN_BYTES");
  }
  return bytes;
}

}  // namespace

Status initComm(braidComm_t* out, int nranks, const braidUniqueId& commId, int rank,
                const braidConfig_t* config) {
  if (out == nullptr) return invalidArgument("comm (the output pointer) is NULL");
  if (nranks < 1)
    return invalidArgument("nranks is " + std::to_string(nranks) + "; it must be >= 1");
  if (rank < 0 || rank >= nranks) {
    return invalidArgument("rank " + std::to_string(rank) + " is outside 0.." +
                           std::to_string(nranks - 1));
  }
  std::string transportList;
  BRAID_ASSIGN_OR_RETURN(CommConfig cfg, configFrom(config, &transportList));
  BRAID_ASSIGN_OR_RETURN(UniqueIdData id, unpackUniqueId(commId));
  setLogRank(rank);
  // The GPU this rank uses, when one is bound at init (NCCL's rule): topo places it,
  // and the network transports prefer the NIC nearest it.
  cfg.place = topo::localPlace(cuda::boundDeviceBusId());
  BRAID_ASSIGN_OR_RETURN(auto transports,
                         makeTransports(transportList, {topo::localNearestNic(cfg.place)}));
  BRAID_ASSIGN_OR_RETURN(cfg.singleCopyMinBytes, singleCopyMinBytes(transports, nranks));
  BRAID_TRY(AlgoPolicy::parse(envString("BRAID_ALGO")).status());  // before anyone waits on us
  cfg.nodeBlob = topo::localNodeBlob();
  auto handle = std::make_unique<braidComm>();
  BRAID_ASSIGN_OR_RETURN(handle->comm, Comm::create(id, nranks, rank, cfg, std::move(transports)));
  BRAID_TRY(setUpSelector(*handle, transportList));
  BRAID_TRY(setUpTracing(handle.get()));
  handle->checkCalls = envInt("BRAID_CHECK", 0) != 0;
  handle->exec = std::make_unique<HostExecutor>(*handle->comm);
  handle->windows = std::make_unique<NodeWindows>(*handle->comm, *handle->exec);
  BRAID_TRY(loadAlgorithmFiles(handle.get()));  // refused files fail init, before any call
  BRAID_INFO("rank %d of %d ready (reduction kernels: %s)", rank, nranks, reduceIsa());
  installDumpSignal();
  braidComm* raw = handle.release();
  registerComm(raw);
  *out = raw;
  return Status::ok();
}

Status newUniqueId(braidUniqueId* out) {
  BRAID_ASSIGN_OR_RETURN(SockAddr addr, chooseInterfaceAddress(envString("BRAID_SOCKET_IFNAME")));
  UniqueIdData id;
  id.secret = randomSecret();
  BRAID_TRY(startRootService(addr, id.secret, envInt("BRAID_TIMEOUT_MS", 300000), &id.root)
                .status());
  packUniqueId(id, out);
  return Status::ok();
}

Status initCommFromEnv(braidComm_t* out, const braidConfig_t* config) {
  int rank = -1;
  int nranks = -1;
  BRAID_TRY(launcherRankAndSize(&rank, &nranks));
  std::shared_ptr<RootHandle> root;  // rank 0 serves the rendezvous
  BRAID_ASSIGN_OR_RETURN(UniqueIdData id, uniqueIdFromEnv(rank, nranks, &root));
  braidUniqueId packed;
  packUniqueId(id, &packed);
  Status result = initComm(out, nranks, packed, rank, config);
  // The service ends once it has answered everyone; leaving earlier would cut
  // off ranks still waiting for their answer. When this rank failed on its own
  // (bad settings), the others cannot complete anyway: do not wait for them.
  if (root &&
      (result.isOk() || result.code() == braidRemoteError || result.code() == braidTimeout)) {
    root->wait();
  }
  return result;
}

Status asyncErrorOf(braidComm* comm) {
  pollDeviceErrors(comm);  // device calls' barriers another rank released, once synced
  return comm->comm->asyncError();
}

Status finalizeComm(braidComm* comm) {
  drain(comm);
  BRAID_TRY(flushDeviceCalls(comm));  // device calls enqueued on CUDA streams finish first
  comm->comm->finalize();
  return Status::ok();
}

void destroyComm(braidComm* comm) {
  drain(comm);
  unregisterComm(comm);
  waitForCalls(comm);
  {
    std::lock_guard<std::mutex> lock(comm->opMu);  // no operation runs past here
  }
  writeTrace(comm, "destroy");
  freeComm(comm);
}

void abortComm(braidComm* comm) {
  comm->comm->requestAbort();
  unregisterComm(comm);
  // Waiting operations see the abort within one wait slice (10 ms) and leave.
  waitForCalls(comm);
  { std::lock_guard<std::mutex> lock(comm->opMu); }
  drain(comm);
  writeTrace(comm, "abort");
  freeComm(comm);
}

}  // namespace braid
