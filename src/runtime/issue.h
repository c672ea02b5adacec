// Issuing calls: now (the NULL stream), on a host stream's worker, on a CUDA stream, or at
// the outermost braidGroupEnd. The C entry points hand every checked call to issueOne.
#pragma once

#include <vector>

#include "braid/braid.h"
#include "exec/call.h"
#include "runtime/communicator.h"

namespace braid {

// Issues `ops` now (NULL stream) or on `stream`, reporting asynchronous
// failures through the communicator. A stream takes the calls out of `ops`; on the NULL
// stream they stay, and the caller may reuse the vector.
braidResult_t issueOps(braidComm* comm, std::vector<Call>&& ops, braidStream_t stream);
// The same for one op (no allocation on the NULL stream's host path).
braidResult_t issueOne(braidComm* comm, Call&& op, braidStream_t stream);

// Inside braidGroupStart/End on this thread: queues the op and returns true.
bool queueInGroup(braidComm* comm, Call&& op, braidStream_t stream);

// braidGroupStart and braidGroupEnd: groups nest; the outermost end issues what was queued.
void groupStart();
braidResult_t groupEnd();

}  // namespace braid
