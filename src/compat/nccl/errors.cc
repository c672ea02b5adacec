// Result codes and messages: NCCL's texts for ncclGetErrorString, Braid's
// messages (or the drop-in's own) for ncclGetLastError.
#include <strings.h>

#include <cstdio>
#include <cstdlib>

#include "compat/nccl/compat.h"

namespace braid::nccl {
namespace {

thread_local std::string tLastError;
thread_local std::string tReturned;  // what ncclGetLastError last handed this thread

// 0 none, 1 version, 2 warn, 3 info, 4 trace: BRAID_DEBUG, else NCCL_DEBUG.
int debugLevel() {
  static const int level = [] {
    const char* v = std::getenv("BRAID_DEBUG");
    if (v == nullptr || *v == '\0') v = std::getenv("NCCL_DEBUG");
    if (v == nullptr) return 2;
    if (strcasecmp(v, "INFO") == 0) return 3;
    if (strcasecmp(v, "TRACE") == 0) return 4;
    if (strcasecmp(v, "NONE") == 0) return 0;
    if (strcasecmp(v, "VERSION") == 0) return 1;
    return 2;
  }();
  return level;
}

}  // namespace

void logInfo(const std::string& line) {
  if (debugLevel() >= 3) std::fprintf(stderr, "braid-nccl INFO %s\n", line.c_str());
}

ncclResult_t toNccl(braidResult_t result) {
  switch (result) {
    case braidSuccess: return ncclSuccess;
    case braidUnhandledCudaError: return ncclUnhandledCudaError;
    case braidSystemError: return ncclSystemError;
    case braidInternalError: return ncclInternalError;
    case braidInvalidArgument: return ncclInvalidArgument;
    case braidInvalidUsage: return ncclInvalidUsage;
    case braidRemoteError: return ncclRemoteError;
    case braidInProgress: return ncclInProgress;
    // A wait passed BRAID_TIMEOUT_MS: a peer is stuck or gone, which NCCL
    // reports as a remote error. The message says it was a timeout.
    case braidTimeout: return ncclRemoteError;
    default: return ncclInternalError;
  }
}

ncclResult_t fail(ncclComm* comm, ncclResult_t code, const std::string& message) {
  tLastError = message;
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->lastError = message;
  }
  logInfo(std::string(ncclGetErrorString(code)) + ": " + message);
  return code;
}

ncclResult_t fromBraid(ncclComm* comm, braidResult_t result) {
  if (result == braidSuccess) return ncclSuccess;
  // Braid keeps the failing call's message for this thread.
  std::string message = braidGetLastError(nullptr);
  if (result == braidTimeout) message += " (Braid timed out: BRAID_TIMEOUT_MS)";
  tLastError = message;
  if (comm != nullptr) {
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->lastError = message;
  }
  return toNccl(result);
}

}  // namespace braid::nccl

using namespace braid::nccl;

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

// NCCL's text when comm is NULL is this thread's last error; for a live
// communicator, its own. A dead handle falls back to the thread's.
const char* ncclGetLastError(ncclComm_t comm) {
  if (comm != nullptr) {
    CommGuard guard(comm, nullptr);
    if (guard.ok()) {
      std::lock_guard<std::mutex> lock(comm->mu);
      tReturned = comm->lastError;
      return tReturned.c_str();
    }
  }
  tReturned = tLastError;
  return tReturned.c_str();
}

}  // extern "C"

BRAID_NCCL_ALIAS(ncclGetErrorString)
BRAID_NCCL_ALIAS(ncclGetLastError)
