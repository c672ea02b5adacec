#include "core/link_hello.h"

#include <cstring>
#include <string>

namespace braid {

LinkHello makeLinkHello(uint32_t kind, const Secret& secret, int from, int to, uint64_t sliceBytes,
                        int slots) {
  LinkHello h{};
  h.magic = kLinkMagic;
  h.kind = kind;
  std::memcpy(h.secret, secret.data(), sizeof(h.secret));
  h.from = from;
  h.to = to;
  h.sliceBytes = sliceBytes;
  h.slots = slots;
  return h;
}

Expected<LinkOrigin> parseLinkHello(const void* wire, size_t size, const LinkExpectation& expect) {
  LinkHello h;
  if (wire == nullptr || size != sizeof(h)) {
    return remoteError("link hello of " + std::to_string(size) + " bytes, expected " +
                       std::to_string(sizeof(h)));
  }
  std::memcpy(&h, wire, sizeof(h));
  if (h.magic != kLinkMagic || !secretEquals(h.secret, expect.secret.data())) {
    return remoteError("the connection did not present this job's secret");
  }
  if (h.to != expect.rank || h.from < 0 || h.from >= expect.nranks || h.from == expect.rank) {
    return remoteError("link hello from rank " + std::to_string(h.from) + " to rank " +
                       std::to_string(h.to) + " reached rank " + std::to_string(expect.rank) +
                       " of " + std::to_string(expect.nranks));
  }
  if (h.kind != kLinkControl && h.kind != kLinkData && h.kind != kLinkPass) {
    return remoteError("link hello of unknown kind " + std::to_string(h.kind));
  }
  if (h.sliceBytes != expect.sliceBytes || h.slots != expect.slots) {
    return invalidUsage("rank " + std::to_string(h.from) + " uses slice size " +
                        std::to_string(h.sliceBytes) + " x " + std::to_string(h.slots) +
                        " slots, this rank " + std::to_string(expect.sliceBytes) + " x " +
                        std::to_string(expect.slots) +
                        ": set BRAID_SHM_SLOT_BYTES / BRAID_SHM_SLOTS alike on every rank");
  }
  return LinkOrigin{h.kind, h.from};
}

}  // namespace braid
