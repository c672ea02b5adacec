// Wire formats of the socket transport: the header before every frame, and
// the messages that agree on and open the extra streams. Each parser takes
// the bytes as they arrived and checks every field before anything is used,
// so the fuzzers (fuzz/fuzz_socket_frame.cc, fuzz/fuzz_socket_streams.cc)
// reach exactly what the transport runs. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace braid::transport::socket {

constexpr int kMaxStreams = 16;
constexpr uint32_t kFrameMagic = 0x42524652;   // "BRFR"
constexpr uint32_t kStreamMagic = 0x42525354;  // "BRST": stream count and offer
constexpr uint32_t kJoinMagic = 0x42524a4e;    // "BRJN"
constexpr size_t kTokenBytes = 16;

// The 8 bytes before every frame's payload.
struct FrameHeader {
  uint32_t magic;
  uint32_t bytes;  // payload length, at most the slice size
};

// Each side's stream count, first on the link.
struct StreamHello {
  uint32_t magic;
  uint32_t streams;
};

// The listening side's ephemeral port and the token a joining stream presents.
struct StreamOffer {
  uint32_t magic;
  uint32_t port;
  uint8_t token[kTokenBytes];
};

// The first message on each extra stream.
struct StreamJoin {
  uint32_t magic;
  uint32_t index;
  uint8_t token[kTokenBytes];
};

// The payload length a received header announces; an error when the `size`
// bytes at `wire` are not a whole header, not a frame header, or announce more
// than `sliceBytes` (the receive slot's size).
Expected<uint32_t> parseFrameHeader(const void* wire, size_t size, size_t sliceBytes);

// The peer's stream count, 1..kMaxStreams.
Expected<int> parseStreamHello(const void* wire, size_t size);

// The offered port (1..65535); the token is copied to `token`.
Expected<int> parseStreamOffer(const void* wire, size_t size, uint8_t (&token)[kTokenBytes]);

// The index (1..streams-1) of a joining stream that presents `token`; an
// error for anything else (a stranger at the port, or a corrupt stream).
Expected<int> parseStreamJoin(const void* wire, size_t size, const uint8_t (&token)[kTokenBytes],
                              int streams);

}  // namespace braid::transport::socket
