#include "runtime/last_error.h"

#include <mutex>

#include "core/logging.h"
#include "runtime/communicator.h"
#include "runtime/live_handles.h"

namespace braid {

thread_local std::string tLastError;

braidResult_t finish(braidComm* comm, const Status& status) {
  if (status.isOk()) return braidSuccess;
  tLastError = status.message();
  if (comm != nullptr && isLiveComm(comm)) {
    std::lock_guard<std::mutex> lock(comm->errorMu);
    comm->lastError = status.message();
  }
  // Bad arguments are the caller's to report; failures of the job are logged.
  if (status.code() == braidInvalidArgument || status.code() == braidInvalidUsage) {
    BRAID_INFO("%s: %s", braidGetErrorString(status.code()), status.message().c_str());
  } else {
    BRAID_WARN("%s: %s", braidGetErrorString(status.code()), status.message().c_str());
  }
  return status.code();
}

}  // namespace braid
