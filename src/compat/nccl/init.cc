// Making communicators (init, init-all, split, shrink), blocking or not, and
// ending them (finalize, destroy, abort, revoke).
#include <cstring>
#include <thread>

#include "compat/nccl/group.h"
#include "compat/nccl/profiler.h"

namespace braid::nccl {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(braidUniqueId), "unique ids differ in size");

using MakeFn = braidResult_t (*)(void* state, braidComm_t* out);

struct InitState {
  int nranks;
  braidUniqueId id;
  int rank;
};
braidResult_t makeInit(void* state, braidComm_t* out) {
  auto* s = static_cast<InitState*>(state);
  return braidCommInitRank(out, s->nranks, s->id, s->rank);
}

struct SplitState {
  braidComm_t parent;
  int color;
  int key;
};
braidResult_t makeSplit(void* state, braidComm_t* out) {
  auto* s = static_cast<SplitState*>(state);
  return braidCommSplit(s->parent, s->color, s->key, out, nullptr);
}

struct ShrinkState {
  braidComm_t parent;
  std::vector<int> exclude;
  int flags;
};
braidResult_t makeShrink(void* state, braidComm_t* out) {
  auto* s = static_cast<ShrinkState*>(state);
  return braidCommShrink(s->parent, s->exclude.data(), static_cast<int>(s->exclude.size()), out,
                         nullptr, s->flags);
}

// Makes a communicator into *out: now, when blocking outside a group;
// otherwise on a thread of its own, *out set at once (NULL when it will have
// none, as a split's NCCL_SPLIT_NOCOLOR), returning ncclInProgress when
// non-blocking (poll ncclCommGetAsyncError) and ncclSuccess inside a group
// (ncclGroupEnd waits).
ncclResult_t create(ncclComm_t* out, const Settings& settings, int device, ncclComm* parent,
                    bool makesNone, MakeFn make, std::shared_ptr<void> state) {
  if (settings.blocking && !inGroup()) {
    braidComm_t inner = nullptr;
    braidResult_t r = make(state.get(), &inner);
    if (r != braidSuccess) return fromBraid(parent, r);
    *out = inner == nullptr ? nullptr : newComm(inner, device, settings);
    return ncclSuccess;
  }
  auto job = std::make_shared<Job>();
  ncclComm* comm = nullptr;
  if (!makesNone) {
    comm = newComm(nullptr, device, settings);
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->job = job;
  }
  if (inGroup()) addGroupInit(comm, job, settings.blocking);
  startJob(job, parent, make, std::move(state));
  *out = comm;
  return settings.blocking ? ncclSuccess : ncclInProgress;
}

ncclResult_t initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                      const ncclConfig_t* config, const char* function) {
  const std::string fn = function;
  if (comm == nullptr) return fail(nullptr, ncclInvalidArgument, fn + ": comm is NULL");
  if (nranks < 1) {
    return fail(nullptr, ncclInvalidArgument,
                fn + ": nranks is " + std::to_string(nranks) + "; it must be >= 1");
  }
  if (rank < 0 || rank >= nranks) {
    return fail(nullptr, ncclInvalidArgument,
                fn + ": rank " + std::to_string(rank) + " is outside 0.." +
                    std::to_string(nranks - 1));
  }
  Settings settings;
  if (ncclResult_t r = parseConfig(config, nullptr, &settings); r != ncclSuccess) return r;
  auto state = std::make_shared<InitState>();
  state->nranks = nranks;
  std::memcpy(&state->id, &id, sizeof(id));
  state->rank = rank;
  return create(comm, settings, currentCudaDevice(), nullptr, false, makeInit, state);
}

Settings settingsOf(const ncclComm* comm) {
  Settings s;
  s.blocking = comm->blocking;
  return s;
}

}  // namespace
}  // namespace braid::nccl

using namespace braid::nccl;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) {
    return fail(nullptr, ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  }
  return fromBraid(nullptr, braidGetUniqueId(reinterpret_cast<braidUniqueId*>(uniqueId)));
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

// Braid's rendezvous needs one id; the first serves (every rank passes the
// same list).
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    return fail(nullptr, ncclInvalidArgument,
                "ncclCommInitRankScalable: commIds is NULL or nId (" + std::to_string(nId) +
                    ") < 1");
  }
  return initRank(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

// One process, ndev ranks: every rank is made on a thread of its own (each
// waits for the others at the rendezvous).
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  if (comm == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclCommInitAll: comm is NULL");
  if (ndev < 1) {
    return fail(nullptr, ncclInvalidArgument,
                "ncclCommInitAll: ndev is " + std::to_string(ndev) + "; it must be >= 1");
  }
  for (int i = 0; devlist != nullptr && i < ndev; ++i) {
    if (devlist[i] < 0) {
      return fail(nullptr, ncclInvalidArgument,
                  "ncclCommInitAll: devlist[" + std::to_string(i) + "] is " +
                      std::to_string(devlist[i]));
    }
  }
  braidUniqueId id;
  if (braidResult_t r = braidGetUniqueId(&id); r != braidSuccess) return fromBraid(nullptr, r);
  std::vector<braidComm_t> inner(ndev, nullptr);
  std::vector<braidResult_t> results(ndev, braidSuccess);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      results[i] = braidCommInitRank(&inner[i], ndev, id, i);
      if (results[i] != braidSuccess) errors[i] = braidGetLastError(nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[i] == braidSuccess) continue;
    for (braidComm_t c : inner) {
      if (c != nullptr) (void)braidCommDestroy(c);
    }
    return fail(nullptr, toNccl(results[i]), "ncclCommInitAll: rank " + std::to_string(i) + ": " +
                                                 errors[i]);
  }
  for (int i = 0; i < ndev; ++i) {
    comm[i] = newComm(inner[i], devlist != nullptr ? devlist[i] : i, Settings{});
  }
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  CommGuard guard(comm, "ncclCommSplit");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t parent = guard.ready(&r, /*allowRevoked=*/true);
  if (parent == nullptr) return r;
  if (newcomm == nullptr) return fail(comm, ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return fail(comm, ncclInvalidArgument,
                "ncclCommSplit: color " + std::to_string(color) +
                    " must be >= 0 or NCCL_SPLIT_NOCOLOR");
  }
  Settings parentSettings = settingsOf(comm);
  Settings settings;
  if ((r = parseConfig(config, &parentSettings, &settings)) != ncclSuccess) return r;
  auto state = std::make_shared<SplitState>(SplitState{parent, color, key});
  return create(newcomm, settings, comm->device, comm, color == NCCL_SPLIT_NOCOLOR, makeSplit,
                state);
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  CommGuard guard(comm, "ncclCommShrink");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t parent = guard.ready(&r, /*allowRevoked=*/true);
  if (parent == nullptr) return r;
  if (newcomm == nullptr) return fail(comm, ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return fail(comm, ncclInvalidArgument,
                "ncclCommShrink: excludeRanksList is NULL or excludeRanksCount is negative");
  }
  if ((shrinkFlags & ~NCCL_SHRINK_ABORT) != 0) {
    return fail(comm, ncclInvalidArgument,
                "ncclCommShrink: shrinkFlags " + std::to_string(shrinkFlags) +
                    " is not NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT");
  }
  Settings parentSettings = settingsOf(comm);
  Settings settings;
  if ((r = parseConfig(config, &parentSettings, &settings)) != ncclSuccess) return r;
  auto state = std::make_shared<ShrinkState>();
  state->parent = parent;
  state->exclude.assign(excludeRanksList, excludeRanksList + excludeRanksCount);
  state->flags = (shrinkFlags & NCCL_SHRINK_ABORT) != 0 ? BRAID_SHRINK_ABORT : BRAID_SHRINK_DEFAULT;
  return create(newcomm, settings, comm->device, comm, false, makeShrink, state);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  CommGuard guard(comm, "ncclCommFinalize");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  return fromBraid(comm, braidCommFinalize(inner));
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
  if (!unregisterComm(comm)) {
    return fail(nullptr, ncclInvalidArgument,
                "ncclCommDestroy: comm is not a live communicator (destroyed, aborted, or never "
                "made)");
  }
  waitIdle(comm);  // a split of it still running, say
  std::shared_ptr<Job> job = comm->job;
  if (job) waitJob(*job);
  (void)adoptJob(comm);
  braidComm_t inner = comm->inner.load();
  braidResult_t r = inner != nullptr ? braidCommDestroy(inner) : braidSuccess;
  ncclResult_t result = fromBraid(nullptr, r);
  finalizeProfiler(comm);
  freeWindows(comm);
  delete comm;
  return result;
}

// Safe from any thread: calls inside the communicator fail and leave, and a
// creation still running is left to free what it makes.
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclCommAbort: comm is NULL");
  if (!unregisterComm(comm)) {
    return fail(nullptr, ncclInvalidArgument,
                "ncclCommAbort: comm is not a live communicator (destroyed, aborted, or never "
                "made)");
  }
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    job = comm->job;
  }
  if (job) {
    std::lock_guard<std::mutex> lock(job->mu);
    job->abandoned = true;
    if (job->done && job->made != nullptr) {
      (void)braidCommAbort(job->made);
      job->made = nullptr;
    }
  }
  braidComm_t inner = comm->inner.load();
  braidResult_t r = inner != nullptr ? braidCommAbort(inner) : braidSuccess;
  waitIdle(comm);
  finalizeProfiler(comm);
  freeWindows(comm);
  delete comm;
  return fromBraid(nullptr, r);
}

// Braid cannot stop one communicator's operations short of aborting it: a
// revoked communicator refuses new work (destroy, abort, split and shrink
// remain) and lets what is in flight end.
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  CommGuard guard(comm, "ncclCommRevoke");
  if (!guard.ok()) return guard.result();
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    return fail(comm, ncclInvalidArgument,
                "ncclCommRevoke: revokeFlags must be NCCL_REVOKE_DEFAULT (0), not " +
                    std::to_string(revokeFlags));
  }
  comm->revoked.store(true);
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  CommGuard guard(comm, "ncclCommGetAsyncError");
  if (!guard.ok()) return guard.result();
  if (asyncError == nullptr) {
    return fail(comm, ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  }
  ncclResult_t made = adoptJob(comm);
  braidComm_t inner = comm->inner.load(std::memory_order_acquire);
  if (made != ncclSuccess || inner == nullptr) {
    *asyncError = made == ncclSuccess ? ncclInternalError : made;
    return ncclSuccess;
  }
  if (comm->busy.load() > 0) {
    *asyncError = ncclInProgress;
    return ncclSuccess;
  }
  braidResult_t e = braidSuccess;
  if (braidResult_t r = braidCommGetAsyncError(inner, &e); r != braidSuccess) {
    return fromBraid(comm, r);
  }
  if (e != braidSuccess) {
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->lastError = braidGetLastError(inner);
  }
  *asyncError = toNccl(e);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  CommGuard guard(comm, "ncclCommCount");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r, /*allowRevoked=*/true);
  if (inner == nullptr) return r;
  return fromBraid(comm, braidCommCount(inner, count));
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  CommGuard guard(comm, "ncclCommUserRank");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r, /*allowRevoked=*/true);
  if (inner == nullptr) return r;
  return fromBraid(comm, braidCommUserRank(inner, rank));
}

// The CUDA device current when the communicator was made (0 without CUDA),
// or ncclCommInitAll's devlist entry.
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  CommGuard guard(comm, "ncclCommCuDevice");
  if (!guard.ok()) return guard.result();
  if (device == nullptr) return fail(comm, ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
  *device = comm->device;
  return ncclSuccess;
}

// Braid reads its log settings (BRAID_DEBUG, NCCL_DEBUG) once; nothing to reload.
void ncclResetDebugInit() {}

}  // extern "C"

BRAID_NCCL_ALIAS(ncclGetVersion)
BRAID_NCCL_ALIAS(ncclGetUniqueId)
BRAID_NCCL_ALIAS(ncclCommInitRank)
BRAID_NCCL_ALIAS(ncclCommInitRankConfig)
BRAID_NCCL_ALIAS(ncclCommInitRankScalable)
BRAID_NCCL_ALIAS(ncclCommInitAll)
BRAID_NCCL_ALIAS(ncclCommSplit)
BRAID_NCCL_ALIAS(ncclCommShrink)
BRAID_NCCL_ALIAS(ncclCommFinalize)
BRAID_NCCL_ALIAS(ncclCommDestroy)
BRAID_NCCL_ALIAS(ncclCommAbort)
BRAID_NCCL_ALIAS(ncclCommRevoke)
BRAID_NCCL_ALIAS(ncclCommGetAsyncError)
BRAID_NCCL_ALIAS(ncclCommCount)
BRAID_NCCL_ALIAS(ncclCommUserRank)
BRAID_NCCL_ALIAS(ncclCommCuDevice)
extern "C" __attribute__((alias("ncclResetDebugInit"))) void pncclResetDebugInit();
