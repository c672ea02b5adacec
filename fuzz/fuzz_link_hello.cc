// The first message on a peer link (core/link_hello.h), as a stranger or a
// rank of another job might send it: the first byte picks the accepting rank
// (0..7 of 8), the rest is the hello. What parses names another rank of the
// job and a known link kind; only matching slice settings pass; a hello made
// by makeLinkHello for this rank always parses.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/link_hello.h"

namespace {
constexpr braid::Secret kSecret = {'b', 'r', 'a', 'i', 'd', '-', 'f', 'u',
                                   'z', 'z', '-', 's', 'e', 'c', 'r', 't'};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const braid::LinkExpectation expect{kSecret, data[0] % 8, 8, 128 << 10, 8};
  braid::Expected<braid::LinkOrigin> origin = braid::parseLinkHello(data + 1, size - 1, expect);
  if (origin.isOk()) {
    braid::LinkHello h;
    std::memcpy(&h, data + 1, sizeof(h));
    const braid::LinkOrigin& o = origin.value();
    if (o.from < 0 || o.from >= expect.nranks || o.from == expect.rank || o.kind != h.kind ||
        (o.kind != braid::kLinkControl && o.kind != braid::kLinkData &&
         o.kind != braid::kLinkPass) ||
        h.sliceBytes != expect.sliceBytes || h.slots != expect.slots ||
        std::memcmp(h.secret, kSecret.data(), kSecret.size()) != 0) {
      std::abort();
    }
  } else if (origin.status().message().empty()) {
    std::abort();
  }
  const int from = (expect.rank + 1 + data[0] / 8 % 7) % 8;
  const braid::LinkHello mine = braid::makeLinkHello(braid::kLinkData, kSecret, from, expect.rank,
                                                     expect.sliceBytes, expect.slots);
  if (!braid::parseLinkHello(&mine, sizeof(mine), expect).isOk()) std::abort();
  return 0;
}
