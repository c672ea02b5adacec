// The communicator's life: made from a unique id (or the launcher's environment), its
// asynchronous error, finalized, destroyed or aborted. The C entry points check their
// arguments and call these.
#pragma once

#include "braid/braid.h"
#include "core/status.h"
#include "runtime/communicator.h"

namespace braid {

// Rank `rank` of `nranks` joins the communicator `commId` names: its transports, Comm,
// selector and host executors; *out once registered.
Status initComm(braidComm_t* out, int nranks, const braidUniqueId& commId, int rank,
                const braidConfig_t* config);
// The same with rank, size and rendezvous from the launcher's environment (rank 0 serves it).
Status initCommFromEnv(braidComm_t* out, const braidConfig_t* config);
// A new unique id: this process serves its rendezvous.
Status newUniqueId(braidUniqueId* out);

// The communicator's asynchronous error (device barriers a peer released included).
Status asyncErrorOf(braidComm* comm);
// Waits for its queued and enqueued calls, then finalizes the Comm.
Status finalizeComm(braidComm* comm);
// Waits for its calls, unregisters and frees it (its device current for the teardown).
void destroyComm(braidComm* comm);
// Aborts its calls (they return within one wait slice), unregisters and frees it.
void abortComm(braidComm* comm);

// braidCommSplit and braidCommShrink on a live communicator (runtime/split.cc).
Status splitComm(braidComm* comm, int color, int key, braidComm_t* newcomm,
                 braidConfig_t* config);
Status shrinkComm(braidComm* comm, const int* exclude, int excludeCount, braidComm_t* newcomm,
                  braidConfig_t* config, int flags);

}  // namespace braid
