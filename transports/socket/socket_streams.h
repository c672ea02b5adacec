// The TCP streams of one socket endpoint. The first is the link the
// communicator made and authenticated; the others are opened here: the
// lower-ranked side listens on an ephemeral port of the link's local address
// and sends that port with a random 16-byte token over the link, and the peer
// connects and presents the token on each new stream. Only a process that read
// the authenticated link knows the token, so the extra streams are as
// trustworthy as the link. Stateless functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/transport.h"
#include "transports/socket/socket_wire.h"

namespace braid::transport::socket {

// Streams this side asks for: BRAID_SOCKET_NSOCKS (NCCL_NSOCKS_PERTHREAD x
// NCCL_SOCKET_NTHREADS as fallback), else 2 to another node and 1 on this
// one; clamped to 1..kMaxStreams. Both sides use the smaller of their two.
int wantedStreams(const PeerInfo& self, const PeerInfo& peer);

// Agrees on the stream count over `linkFd` and opens the extra streams. On
// success the result holds linkFd first, then the new streams, all blocking;
// on failure every descriptor, linkFd included, is closed.
Expected<std::vector<int>> openStreams(int linkFd, bool lowerRank, int want,
                                       const Deadline& deadline, const std::string& who);

// Kernel buffers of `bytes` each way (BRAID_SOCKET_BUF_BYTES), where the
// kernel's limits (net.core.wmem_max / rmem_max) allow; else the kernel's own
// autotuning, which a smaller fixed size would only cap.
void setStreamBuffers(int fd, int bytes);

}  // namespace braid::transport::socket
