#include "transports/registry.h"

#include <algorithm>
#include <cctype>

#include "core/env.h"
#include "transports/shm/shm_transport.h"
#include "transports/socket/socket_transport.h"
#ifdef BRAID_HAVE_UCX
#include "transports/ucx/ucx_transport.h"
#endif
#ifdef BRAID_HAVE_IBVERBS
#include "transports/ibverbs/ibverbs_transport.h"
#endif

namespace braid::transport {
namespace {

std::string networkName() {
  std::string net = envString("BRAID_NET");
  std::transform(net.begin(), net.end(), net.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (net == "ib") return "ibverbs";
  return net.empty() ? "socket" : net;
}

}  // namespace

std::string builtTransports() {
  std::string names = "shm, socket";
#ifdef BRAID_HAVE_UCX
  names += ", ucx";
#endif
#ifdef BRAID_HAVE_IBVERBS
  names += ", ibverbs";
#endif
  return names;
}

Expected<std::unique_ptr<Transport>> makeTransport(const std::string& requested,
                                                   const TransportHints& hints) {
  const std::string name = requested == "socket" ? networkName() : requested;
  if (name == "shm") return shm::makeShmTransport();
  if (name == "socket") return socket::makeSocketTransport();
#ifdef BRAID_HAVE_UCX
  if (name == "ucx") return ucx::makeUcxTransport();
#endif
#ifdef BRAID_HAVE_IBVERBS
  if (name == "ibverbs") return ibverbs::makeIbverbsTransport(hints.nic);
#endif
  (void)hints;  // used by transports this build may lack
  std::string via = name == requested ? "BRAID_TRANSPORTS" : "BRAID_NET";
  return invalidArgument(via + " names transport '" + name + "', which this build does not " +
                         "have (built: " + builtTransports() + ")");
}

}  // namespace braid::transport
