// ucx: ranks connected through UCX's UCP tag API, which picks the fabric
// (RDMA verbs where there is one; tcp, shared memory, ... per UCX_TLS).
//
// The transport owns one UCP context and worker per communicator, made on
// the first connection. Endpoints exchange worker addresses over the
// authenticated link, which then stays open unused. Each slot is one tagged
// message (tag = sender rank and frame number): the receiver keeps a receive
// posted into every free slot of its ring, so data lands in place; the sender
// keeps the slot until UCX reports the send complete. Everything moves in
// ucp_worker_progress, which the endpoint's calls drive; nothing blocks but
// wait(), which sleeps on the worker's event descriptor.
//
// Thread-safety: like every Endpoint, one thread at a time per communicator
// (its endpoints share the worker).
#pragma once

#include <memory>

#include "core/transport.h"

namespace braid::transport::ucx {

std::unique_ptr<Transport> makeUcxTransport();

}  // namespace braid::transport::ucx
