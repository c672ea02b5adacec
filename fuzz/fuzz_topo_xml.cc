// Topology XML (BRAID_TOPO_FILE, and every rank's node description at
// bootstrap): any bytes parse or fail cleanly; what parses survives a round
// trip through toXml unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "topo/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  braid::Expected<braid::topo::Topology> t = braid::topo::parseXml(text, "fuzz");
  if (!t.isOk()) return 0;
  const std::string once = braid::topo::toXml(t.value());
  braid::Expected<braid::topo::Topology> again = braid::topo::parseXml(once, "fuzz round trip");
  if (!again.isOk() || braid::topo::toXml(again.value()) != once) std::abort();
  return 0;
}
