// The registry of live communicators and host streams: a destroyed or made-up handle is an
// error, not a crash. destroy and abort unregister a communicator, then wait for the calls
// that counted themselves in (acquireComm) before they free it.
#pragma once

#include <functional>

#include "braid/braid.h"
#include "runtime/communicator.h"

namespace braid {

// Registry of live handles.
void registerComm(braidComm* comm);
void unregisterComm(braidComm* comm);
bool isLiveComm(const braidComm* comm);
// For a call that does more than a few instructions before it takes opMu (the CUDA
// path classifies pointers, which can load the driver): counts the call in
// comm->activeCalls if comm is still registered (false: it was destroyed or aborted, and
// comm must not be touched). destroy and abort unregister, then waitForCalls() before
// they free the communicator.
bool acquireComm(braidComm* comm);
void releaseComm(braidComm* comm);
void waitForCalls(braidComm* comm);
// Calls fn on every live communicator while holding the registry's lock (no
// communicator is freed meanwhile; fn must not call back into the registry).
void forEachLiveComm(const std::function<void(const braidComm*)>& fn);

// Whether `stream` is NULL or a live host stream.
bool isValidStream(braidStream_t stream);
void registerStream(braidStream_t stream);
void unregisterStream(braidStream_t stream);
// Whether `stream` came from braidStreamCreate and was destroyed since. A pointer that
// is neither NULL, a live nor a destroyed Braid stream is taken to be a cudaStream_t.
bool isDestroyedStream(braidStream_t stream);

}  // namespace braid
