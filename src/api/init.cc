// C entry points that create, query and destroy communicators: argument checks and
// handle lookup here, the work in the runtime (runtime/communicator_ops.h).
#include "braid/braid.h"
#include "runtime/communicator_ops.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"
#include "runtime/tracing.h"
#include "runtime/user_algorithms.h"

using namespace braid;

namespace {

Status checkComm(const braidComm* comm) {
  if (comm == nullptr) return invalidArgument("comm is NULL");
  if (!isLiveComm(comm)) {
    return invalidArgument("comm is not a live communicator (destroyed, aborted, or never made)");
  }
  return Status::ok();
}

}  // namespace

extern "C" {

braidResult_t braidGetVersion(int* version) {
  if (version == nullptr) return finish(nullptr, invalidArgument("version is NULL"));
  *version = BRAID_VERSION_CODE;
  return braidSuccess;
}

const char* braidGetErrorString(braidResult_t result) {
  switch (result) {
    case braidSuccess:
      return "no error";
    case braidUnhandledCudaError:
      return "unhandled cuda error";
    case braidSystemError:
      return "system error";
    case braidInternalError:
      return "internal error";
    case braidInvalidArgument:
      return "invalid argument";
    case braidInvalidUsage:
      return "invalid usage";
    case braidRemoteError:
      return "remote process exited or there was a network error";
    case braidInProgress:
      return "operation in progress";
    case braidTimeout:
      return "timed out";
    default:
      return "unknown result code";
  }
}

const char* braidGetLastError(braidComm_t comm) {
  if (comm != nullptr && isLiveComm(comm)) {
    std::lock_guard<std::mutex> lock(comm->errorMu);
    return comm->lastError.c_str();
  }
  return tLastError.c_str();
}

braidResult_t braidGetUniqueId(braidUniqueId* uniqueId) {
  if (uniqueId == nullptr) return finish(nullptr, invalidArgument("uniqueId is NULL"));
  return finish(nullptr, newUniqueId(uniqueId));
}

braidResult_t braidCommInitRank(braidComm_t* comm, int nranks, braidUniqueId commId, int rank) {
  return finish(nullptr, initComm(comm, nranks, commId, rank, nullptr));
}

braidResult_t braidCommInitRankConfig(braidComm_t* comm, int nranks, braidUniqueId commId, int rank,
                                      braidConfig_t* config) {
  return finish(nullptr, initComm(comm, nranks, commId, rank, config));
}

braidResult_t braidCommInitFromEnv(braidComm_t* comm, braidConfig_t* config) {
  return finish(nullptr, initCommFromEnv(comm, config));
}

braidResult_t braidCommCount(const braidComm_t comm, int* count) {
  Status st = checkComm(comm);
  if (st.isOk() && count == nullptr) st = invalidArgument("count is NULL");
  if (!st.isOk()) return finish(comm, st);
  *count = comm->comm->nranks();
  return braidSuccess;
}

braidResult_t braidCommUserRank(const braidComm_t comm, int* rank) {
  Status st = checkComm(comm);
  if (st.isOk() && rank == nullptr) st = invalidArgument("rank is NULL");
  if (!st.isOk()) return finish(comm, st);
  *rank = comm->comm->rank();
  return braidSuccess;
}

braidResult_t braidCommGetAsyncError(braidComm_t comm, braidResult_t* asyncError) {
  Status st = checkComm(comm);
  if (st.isOk() && asyncError == nullptr) st = invalidArgument("asyncError is NULL");
  if (!st.isOk()) return finish(comm, st);
  Status err = asyncErrorOf(comm);
  if (!err.isOk()) finish(comm, err);
  *asyncError = err.code();
  return braidSuccess;
}

braidResult_t braidCommRegisterAlgorithm(braidComm_t comm, const char* pathOrJson) {
  Status st = checkComm(comm);
  if (st.isOk() && pathOrJson == nullptr) st = invalidArgument("pathOrJson is NULL");
  if (st.isOk() && *pathOrJson == '\0') st = invalidArgument("pathOrJson is empty");
  if (st.isOk() && comm->inflight.load() > 0) {
    st = invalidUsage(
        "braidCommRegisterAlgorithm while operations of comm are queued on streams: "
        "synchronize them first (every rank must register at the same point)");
  }
  if (!st.isOk()) return finish(comm, st);
  return finish(comm, registerAlgorithm(comm, pathOrJson));
}

braidResult_t braidCommFinalize(braidComm_t comm) {
  Status st = checkComm(comm);
  if (!st.isOk()) return finish(comm, st);
  return finish(comm, finalizeComm(comm));
}

braidResult_t braidCommDestroy(braidComm_t comm) {
  Status st = checkComm(comm);
  if (!st.isOk()) return finish(comm, st);
  destroyComm(comm);
  return braidSuccess;
}

braidResult_t braidTraceMarker(braidComm_t comm, const char* name) {
  Status st = checkComm(comm);
  if (st.isOk() && name == nullptr) st = invalidArgument("name (the marker's) is NULL");
  if (!st.isOk()) return finish(comm, st);
  traceMarker(comm, name);
  return braidSuccess;
}

braidResult_t braidCommAbort(braidComm_t comm) {
  Status st = checkComm(comm);
  if (!st.isOk()) return finish(comm, st);
  abortComm(comm);
  return braidSuccess;
}

}  // extern "C"
