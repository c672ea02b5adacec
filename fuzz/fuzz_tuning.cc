// Tuning files (BRAID_TUNING_FILE): any bytes parse or fail cleanly, and what
// parses prices every collective without a non-finite or negative time.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "select/tuning.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  braid::Expected<braid::Tuning> t = braid::Tuning::parse(text, "fuzz");
  if (!t.isOk()) return 0;
  braid::CostInputs in;
  in.nranks = 4;
  in.ranksPerNode = 4;
  in.intra = {1, 10};
  in.inter = {3, 5};
  for (const char* transport : {"shm", "socket"}) {
    const braid::CostInputs tuned = braid::applyTuning(in, t.value(), transport);
    for (int c = 0; c <= static_cast<int>(braid::algo::Collective::kAllToAllv); ++c) {
      for (const auto& [a, us] :
           braid::rankAlgorithms(static_cast<braid::algo::Collective>(c), 1 << 20, tuned)) {
        if (std::isnan(us) || us < 0) std::abort();
      }
    }
  }
  return 0;
}
