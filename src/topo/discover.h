// Discovery of this host's topology with hwloc, and the host identity that
// groups ranks into nodes. Thread-safe (no shared state).
#pragma once

#include <string>

#include "core/status.h"
#include "topo/topology.h"

namespace braid::topo {

// The identity of this host: BRAID_HOST_ID when set, else host name + "/" +
// boot id. The boot id tells apart containers that share a host name across
// machines, and is the same for containers on one machine, which can share
// memory. Same rule as Comm's peer grouping (src/core/comm.cc).
std::string hostIdentity();
// The host name, for messages.
std::string hostName();

// A described minimal node: 1 package and 1 NUMA node holding every online CPU,
// no devices; `reason` says why discovery was not possible.
Node fallbackNode(const std::string& reason);

// This host as a one-node Topology. Without hwloc, or when hwloc sees no
// package or core (some containers), returns fallbackNode() and logs at INFO.
Expected<Topology> discoverLocal();

}  // namespace braid::topo
