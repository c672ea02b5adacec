// Transports by name, for BRAID_TRANSPORTS: the one place that knows which
// were compiled in (ucx and ibverbs need their libraries at build time).
// Stateless; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "core/transport.h"

namespace braid::transport {

// What the engine knows about this rank that a transport may use.
struct TransportHints {
  // The NIC nearest this rank's GPU (or CPU), from the topology
  // (topo::localNearestNic): "mlx5_3"; "" when unknown. ibverbs opens it first.
  std::string nic;
};

// "shm", "socket", "ucx", "ibverbs". "socket" means the network transport:
// BRAID_NET (socket, ucx, ib / ibverbs) swaps in another one.
Expected<std::unique_ptr<Transport>> makeTransport(const std::string& name,
                                                   const TransportHints& hints = {});

// The names makeTransport accepts in this build, for messages: "shm, socket, ucx".
std::string builtTransports();

}  // namespace braid::transport
