// braidUniqueId bytes from a user (or an attacker): unpack accepts only what
// packUniqueId made, and what it accepts packs back to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/bootstrap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  braidUniqueId id{};
  std::memcpy(&id, data, size < sizeof(id) ? size : sizeof(id));
  braid::Expected<braid::UniqueIdData> d = braid::unpackUniqueId(id);
  if (!d.isOk()) return 0;
  braidUniqueId again{};
  braid::packUniqueId(d.value(), &again);
  braid::Expected<braid::UniqueIdData> d2 = braid::unpackUniqueId(again);
  if (!d2.isOk() || d2.value().root.len != d.value().root.len ||
      std::memcmp(d2.value().secret.data(), d.value().secret.data(), 16) != 0) {
    std::abort();
  }
  return 0;
}
