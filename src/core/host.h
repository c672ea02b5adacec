// Who this machine is, for grouping ranks into nodes. Stateless; thread-safe.
#pragma once

#include <string>

namespace braid {

// BRAID_HOST_ID (or NCCL_HOSTID) when set, else host name + "/" + boot id, so
// containers on one machine that share its kernel agree and machines differ.
std::string hostIdentity();
// gethostname(), for messages.
std::string hostName();

}  // namespace braid
