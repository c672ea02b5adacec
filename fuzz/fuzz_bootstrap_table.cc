// The root's reply to a joining rank (core/bootstrap.h): the first byte picks
// nranks (1..8), the rest is the payload. Parses or fails cleanly; what parses
// has nranks peers in order with bounded node blobs.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/bootstrap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int nranks = 1 + data[0] % 8;
  const std::string payload(reinterpret_cast<const char*>(data + 1), size - 1);
  braid::Expected<std::vector<braid::PeerInfo>> peers = braid::parseBootstrapTable(payload, nranks);
  if (!peers.isOk()) return 0;
  if (static_cast<int>(peers.value().size()) != nranks) std::abort();
  for (int r = 0; r < nranks; ++r) {
    const braid::PeerInfo& p = peers.value()[r];
    if (p.rank != r || p.nodeBlob.size() > braid::kMaxNodeBlob || p.place.size() >= 64) std::abort();
  }
  return 0;
}
