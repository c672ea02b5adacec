// shm: POSIX shared memory between processes on one node.
//
// Each rank creates the FIFO for its inbound direction from a peer (0600, a
// random 128-bit name), tells the peer the name over the link, and the peer
// maps it and unlinks it, so nothing stays in /dev/shm once both have mapped.
// A FIFO is `slots` slots of sliceBytes plus cache-line separated counters;
// waits spin in the executor and sleep on a futex in the shared page.
#pragma once

#include <memory>

#include "core/transport.h"

namespace braid::transport::shm {

std::unique_ptr<Transport> makeShmTransport();

}  // namespace braid::transport::shm
