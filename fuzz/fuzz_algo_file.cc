// Schedule files (BRAID_ALGO_FILES, braidCommRegisterAlgorithm): JSON or MSCCL's XML. Any
// bytes parse or fail cleanly, under ASan and UBSan.
#include <cstdint>
#include <string>

#include "algorithms/file/schedule_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)braid::algo::parseAlgoFile(text);
  return 0;
}
