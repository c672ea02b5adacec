// Configuration: every BRAID_* environment variable, declared once in a table
// with its default and a line of doc (printed by braid-info --env). NCCL's names
// are read as fallbacks where the meaning is the same. Reads are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid {

struct EnvVar {
  const char* name;      // BRAID_*
  const char* fallback;  // NCCL_* with the same meaning, or nullptr
  const char* defaultValue;
  const char* doc;
};

// The table of every variable Braid reads.
const std::vector<EnvVar>& envTable();

// The value of `name` (or its NCCL fallback, or the table default); "" when
// unset and without default. Names outside the table are read as they are.
std::string envString(const char* name);
// The value as an integer; `fallback` when unset or not a number.
int64_t envInt(const char* name, int64_t fallback);
// Parses sizes like "64K", "4M", "1G" (powers of 1024); -1 when invalid.
int64_t parseSize(const std::string& text);

}  // namespace braid
