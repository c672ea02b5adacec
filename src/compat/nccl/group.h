// ncclGroupStart/End on this thread: calls are kept, and issued together at
// the outermost ncclGroupEnd, one Braid group per communicator, every
// communicator on a thread of its own (one process driving several ranks,
// as after ncclCommInitAll, would deadlock issuing them one by one).
#pragma once

#include "compat/nccl/call.h"

namespace braid::nccl {

bool inGroup();
// A communicator whose creation started inside the group: ncclGroupEnd waits
// for it when it is blocking.
void addGroupInit(ncclComm* comm);

}  // namespace braid::nccl
