// Discovery of this host's topology with hwloc, and the host identity that
// groups ranks into nodes. Thread-safe (no shared state).
#pragma once

#include <string>

#include "core/host.h"
#include "core/status.h"
#include "topo/topology.h"

namespace braid::topo {

// Node identity is braid::hostIdentity() (core/host.h), the rule Comm groups
// ranks by.
using braid::hostIdentity;
using braid::hostName;

// A described minimal node: 1 package and 1 NUMA node holding every online CPU,
// no devices; `reason` says why discovery was not possible.
Node fallbackNode(const std::string& reason);

// This host as a one-node Topology: hwloc's CPUs, GPUs and NICs, then NVML's
// GPUs and NVLinks (topo/nvml.h; GPUs hwloc missed are added). Without hwloc,
// or when hwloc sees no package or core (some containers), the CPU side is
// fallbackNode()'s, said at INFO.
Expected<Topology> discoverLocal();

}  // namespace braid::topo
