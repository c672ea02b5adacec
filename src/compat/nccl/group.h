// ncclGroupStart/End on this thread: calls are kept, and issued together at
// the outermost ncclGroupEnd, one Braid group per communicator, every
// communicator on a thread of its own (one process driving several ranks,
// as after ncclCommInitAll, would deadlock issuing them one by one).
#pragma once

#include "compat/nccl/call.h"

namespace braid::nccl {

bool inGroup();
// A creation started inside the group (comm is NULL when it makes none, as a
// split's NCCL_SPLIT_NOCOLOR): ncclGroupEnd waits for it when blocking.
void addGroupInit(ncclComm* comm, std::shared_ptr<Job> job, bool blocking);
// A premul-sum op destroyed inside the group: Braid's op is destroyed at the outermost
// ncclGroupEnd, after the calls that name it are issued.
void deferOpDestroy(ncclComm* comm, braidRedOp_t op);

}  // namespace braid::nccl
