// socket: TCP between ranks, on other nodes or (BRAID_TRANSPORTS=socket) on
// this one. The link made at connection time becomes the data connection:
// non-blocking, TCP_NODELAY, large kernel buffers. Each slot travels as a frame
// (8-byte header: magic and length, checked on arrival) from a local ring of
// send slots into a local ring of receive slots; progress() moves them.
#pragma once

#include <memory>

#include "core/transport.h"

namespace braid::transport::socket {

std::unique_ptr<Transport> makeSocketTransport();

}  // namespace braid::transport::socket
