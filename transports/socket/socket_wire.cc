#include "transports/socket/socket_wire.h"

#include <cstring>
#include <string>

#include "core/bootstrap.h"

namespace braid::transport::socket {
namespace {

// Copies a fixed-size message out of the received bytes (which may be
// unaligned), or fails naming what was cut short.
template <typename T>
Status readWhole(const void* wire, size_t size, const char* what, T* out) {
  if (wire == nullptr || size != sizeof(T)) {
    return remoteError(std::string(what) + " of " + std::to_string(size) + " bytes, expected " +
                       std::to_string(sizeof(T)) + " (corrupt stream)");
  }
  std::memcpy(out, wire, sizeof(T));
  return Status::ok();
}

}  // namespace

Expected<uint32_t> parseFrameHeader(const void* wire, size_t size, size_t sliceBytes) {
  FrameHeader h;
  BRAID_TRY(readWhole(wire, size, "frame header", &h));
  if (h.magic != kFrameMagic) return remoteError("malformed frame header (corrupt stream)");
  if (h.bytes > sliceBytes) {
    return remoteError("frame header announces " + std::to_string(h.bytes) +
                       " bytes, more than the slice size " + std::to_string(sliceBytes) +
                       " (corrupt stream)");
  }
  return h.bytes;
}

Expected<int> parseStreamHello(const void* wire, size_t size) {
  StreamHello h;
  BRAID_TRY(readWhole(wire, size, "stream count", &h));
  if (h.magic != kStreamMagic || h.streams == 0 || h.streams > static_cast<uint32_t>(kMaxStreams)) {
    return remoteError("malformed stream count (corrupt link)");
  }
  return static_cast<int>(h.streams);
}

Expected<int> parseStreamOffer(const void* wire, size_t size, uint8_t (&token)[kTokenBytes]) {
  StreamOffer o;
  BRAID_TRY(readWhole(wire, size, "stream offer", &o));
  if (o.magic != kStreamMagic || o.port == 0 || o.port > 65535) {
    return remoteError("malformed stream offer (corrupt link)");
  }
  std::memcpy(token, o.token, kTokenBytes);
  return static_cast<int>(o.port);
}

Expected<int> parseStreamJoin(const void* wire, size_t size, const uint8_t (&token)[kTokenBytes],
                              int streams) {
  StreamJoin j;
  BRAID_TRY(readWhole(wire, size, "stream join", &j));
  static_assert(kTokenBytes == 16, "secretEquals compares 16 bytes");
  if (j.magic != kJoinMagic || !secretEquals(j.token, token)) {
    return remoteError("a connection to the stream port did not present the token");
  }
  if (streams < 2 || j.index == 0 || j.index >= static_cast<uint32_t>(streams)) {
    return remoteError("stream join for stream " + std::to_string(j.index) + " of " +
                       std::to_string(streams));
  }
  return static_cast<int>(j.index);
}

}  // namespace braid::transport::socket
