// The messages that open a socket endpoint's extra streams
// (transports/socket/socket_wire.h): the first byte picks the parser (stream
// count, offer, or join for 1..17 streams), the rest is the message. What
// parses is in range and carries the token it was given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transports/socket/socket_wire.h"

using namespace braid::transport::socket;

namespace {
const uint8_t kToken[kTokenBytes] = {'b', 'r', 'a', 'i', 'd', '-', 's', 't',
                                     'r', 'e', 'a', 'm', '-', 't', 'o', 'k'};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* wire = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 3) {
    case 0: {
      braid::Expected<int> streams = parseStreamHello(wire, n);
      if (streams.isOk() && (streams.value() < 1 || streams.value() > kMaxStreams)) std::abort();
      break;
    }
    case 1: {
      uint8_t token[kTokenBytes] = {};
      braid::Expected<int> port = parseStreamOffer(wire, n, token);
      if (port.isOk() && (port.value() < 1 || port.value() > 65535 ||
                          std::memcmp(token, wire + offsetof(StreamOffer, token), kTokenBytes))) {
        std::abort();
      }
      break;
    }
    default: {
      const int streams = 1 + (data[0] / 3) % 17;
      braid::Expected<int> index = parseStreamJoin(wire, n, kToken, streams);
      if (index.isOk() && (index.value() < 1 || index.value() >= streams ||
                           std::memcmp(kToken, wire + offsetof(StreamJoin, token), kTokenBytes))) {
        std::abort();
      }
      break;
    }
  }
  return 0;
}
