// ibverbs: RC queue pairs straight on rdma-core (InfiniBand, RoCE).
//
// The transport opens the first active port BRAID_IB_HCA allows (NCCL's
// grammar, NCCL_IB_HCA as fallback), trying first, when BRAID_IB_HCA is unset,
// the device nearest the rank's GPU (`preferred`, from the topology), and its GID (BRAID_IB_GID_INDEX on RoCE,
// else ib_logic's choice); canConnect() is false when there is none, so the
// next transport in BRAID_TRANSPORTS takes the pair. Per endpoint: one RC QP
// and CQ; slot rings registered through the MR cache. The receiver tells the
// sender where to write each frame through a clear-to-send FIFO in the
// sender's memory (RDMA write of a CtsEntry); the sender RDMA-writes the frame
// with immediate (the length) into that receive slot, and the receiver learns
// of it from its completion queue. Every verbs failure names the device and
// port, the QP number and state, and the work completion status.
//
// Thread-safety: one thread at a time per communicator, like every Endpoint.
#pragma once

#include <memory>
#include <string>

#include "core/transport.h"

namespace braid::transport::ibverbs {

std::unique_ptr<Transport> makeIbverbsTransport(const std::string& preferred = "");

}  // namespace braid::transport::ibverbs
