// Transports by name, for BRAID_TRANSPORTS: the one place that knows which
// were compiled in (ucx and ibverbs need their libraries at build time).
// Stateless; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "core/transport.h"

namespace braid::transport {

// "shm", "socket", "ucx", "ibverbs". "socket" means the network transport:
// BRAID_NET (socket, ucx, ib / ibverbs) swaps in another one.
Expected<std::unique_ptr<Transport>> makeTransport(const std::string& name);

// The names makeTransport accepts in this build, for messages: "shm, socket, ucx".
std::string builtTransports();

}  // namespace braid::transport
