// A socket stream as it arrives (transports/socket/socket_wire.h): the first
// byte picks the slice size, the rest is frames, each an 8-byte header and its
// payload. Every header either fails cleanly or announces at most a slice,
// and its payload is copied into a slice-sized slot as recvStream does (ASan
// catches a header that overruns it).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "transports/socket/socket_wire.h"

using namespace braid::transport::socket;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t slice = static_cast<size_t>(data[0]) * 64;  // 0 .. 16320 bytes
  std::vector<char> slot(slice);
  size_t at = 1;
  while (size - at >= sizeof(FrameHeader)) {
    braid::Expected<uint32_t> bytes = parseFrameHeader(data + at, sizeof(FrameHeader), slice);
    if (!bytes.isOk()) {
      if (bytes.status().message().empty()) std::abort();
      return 0;
    }
    FrameHeader h;
    std::memcpy(&h, data + at, sizeof(h));
    if (h.magic != kFrameMagic || bytes.value() != h.bytes || bytes.value() > slice) std::abort();
    at += sizeof(FrameHeader);
    const size_t take = std::min<size_t>(bytes.value(), size - at);  // the stream may end early
    if (take > 0) std::memcpy(slot.data(), data + at, take);
    at += take;
  }
  // A short header is an error, never a parse of bytes that are not there.
  if (parseFrameHeader(data + at, size - at, slice).isOk()) std::abort();
  return 0;
}
