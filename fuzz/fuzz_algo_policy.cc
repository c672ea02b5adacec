// BRAID_ALGO: any spec parses or fails with a message; a parsed policy answers
// every collective and size with an algorithm implementing it, or an error.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "select/select.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  braid::Expected<braid::AlgoPolicy> p = braid::AlgoPolicy::parse(spec);
  if (!p.isOk()) {
    if (p.status().message().empty()) std::abort();
    return 0;
  }
  for (int c = 0; c <= static_cast<int>(braid::algo::Collective::kAllToAllv); ++c) {
    const auto coll = static_cast<braid::algo::Collective>(c);
    for (uint64_t bytes : {0ull, 8ull, 65536ull, 1ull << 30, ~0ull}) {
      braid::Expected<braid::algo::Algorithm> a = p.value().choose(coll, bytes, 5, 2);
      if (a.isOk() && !braid::algo::supports(a.value(), coll)) std::abort();
    }
  }
  return 0;
}
