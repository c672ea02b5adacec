// Calls on host memory: each collective on the shared windows (exec/host/shared_windows.h)
// where they run its algorithm, else as a FIFO schedule (exec/host/fifo_executor.h); a
// group's sends and receives as one batch. Holds no CUDA header: the device path waits for
// nothing here.
#pragma once

#include <vector>

#include "exec/call.h"
#include "runtime/communicator.h"
#include "select/user_choice.h"

namespace braid {

// Runs `ops` on comm: collectives one after another in order, then every
// send and receive together as one batch (so any pattern completes). Holds
// comm->opMu throughout.
Status runOps(braidComm* comm, const std::vector<Call>& ops);
Status runOps(braidComm* comm, const Call* ops, size_t n);
// runOps for a caller that already holds comm->opMu.
Status runOpsLocked(braidComm* comm, const Call* ops, size_t n);
// Every rank's `bytes` at `mine` into `all` (rank r's at r * bytes) by the ring, whatever
// BRAID_ALGO says: the library's own agreements (BRAID_CHECK's call signatures, the ranks'
// algorithm files), which must run before and apart from what the user chose. The
// caller holds comm->opMu; `what` names it in errors.
Status agreeOnRing(braidComm* comm, const void* mine, void* all, size_t bytes, const char* what);

// What a loaded algorithm must serve of the collective `op` (with `args`, its rank's view)
// besides its collective and size: its mode (a premul-sum's runs out of place, on its
// scaled copy), type, op and root. The device path asks too.
CallFit callFitOf(const Call& op, const algo::CollArgs& args);

}  // namespace braid
