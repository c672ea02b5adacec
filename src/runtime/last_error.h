// The last error, as braidGetLastError reports it: every C entry point turns a Status into
// a braidResult_t here, keeping its message (the communicator's, when live, and this
// thread's).
#pragma once

#include <string>

#include "braid/braid.h"
#include "core/status.h"

struct braidComm;

namespace braid {

// Records `status` as the last error (of comm, when live, and of this thread)
// and returns its code. Logs it at WARN level once.
braidResult_t finish(braidComm* comm, const Status& status);
// This thread's last error, as braidGetLastError(NULL) reports it.
extern thread_local std::string tLastError;

}  // namespace braid
