// shm: POSIX shared memory between processes on one node.
//
// Each rank creates the FIFO for its inbound direction from a peer (0600, a
// random 128-bit name), tells the peer the name over the link, and the peer
// maps it and unlinks it, so nothing stays in /dev/shm once both have mapped.
// A FIFO is `slots` slots of sliceBytes plus cache-line separated counters;
// waits spin in the executor and sleep on a futex in the shared page.
//
// Single copy (single_copy.h): where both sides of a pair may read each other's
// memory (probed at connect with a random token), a slot may carry, instead of
// bytes, the address of bytes in the sender's memory; the receiver copies them
// with process_vm_readv and releases the slot, which tells the sender it is done
// with them.
#pragma once

#include <memory>

#include "core/transport.h"

namespace braid::transport::shm {

// The first one a process makes also sweeps /dev/shm (sweepDeadSegments, once).
std::unique_ptr<Transport> makeShmTransport();

// Segment names are /braid-<creator pid>-<its pid namespace>-<128 random bits>. Removes
// this user's segments whose creator, in this process's pid namespace, no longer exists:
// what a killed rank left (a FIFO no peer had mapped yet, a braidMemAlloc or registered
// buffer, a window not yet unlinked), whatever launched it (braidrun removes its own
// ranks' at once). Names of another pid namespace (containers sharing /dev/shm) or of
// the older form are never touched. Returns how many it removed.
int sweepDeadSegments();

}  // namespace braid::transport::shm
