// socket: TCP between ranks, on other nodes or (BRAID_TRANSPORTS=socket) on
// this one. The link made at connection time becomes the first data stream;
// BRAID_SOCKET_NSOCKS streams in all (socket_streams.h), non-blocking,
// TCP_NODELAY, large kernel buffers. Each slot travels as a frame (8-byte
// header: magic and length, checked on arrival); frame k rides stream
// k mod nstreams, so the streams share large transfers and the receiver puts
// frames back in order by index. Memory per peer is fixed: slots x slice bytes
// each way, whatever the stream count. progress() moves bytes and never
// blocks; with several streams pollFd() is an epoll descriptor over them.
#pragma once

#include <memory>

#include "core/transport.h"

namespace braid::transport::socket {

std::unique_ptr<Transport> makeSocketTransport();

}  // namespace braid::transport::socket
