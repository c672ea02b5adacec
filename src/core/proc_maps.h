// This process's memory mappings, as /proc/self/maps lists them: whether an
// address range is covered, without a hole, by mappings that all pass a test.
// Registration asks it before re-backing a buffer (runtime/shared_memory.cc) and before
// putting private pages back (transports/shm). Header-only.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace braid {

struct MapsEntry {
  uintptr_t start = 0;
  uintptr_t end = 0;
  char perms[8] = {};   // "rw-p", "rw-s", ...
  unsigned long long inode = 0;
  char path[256] = {};  // "" for anonymous memory, "[heap]", a file
};

// True when [lo, hi) lies in mappings without a hole and `ok(entry)` holds for
// every mapping that overlaps it; false when /proc/self/maps cannot be read.
template <typename Ok>
bool mapsCover(uintptr_t lo, uintptr_t hi, Ok ok) {
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return false;
  char line[512];
  uintptr_t covered = lo;
  bool good = true;
  while (good && covered < hi && std::fgets(line, sizeof(line), f) != nullptr) {
    MapsEntry e;
    unsigned long long offset = 0;
    char dev[16] = {};
    const int fields = std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %15s %llu %255s",
                                   &e.start, &e.end, e.perms, &offset, dev, &e.inode, e.path);
    if (fields < 6 || e.end <= covered) continue;
    good = e.start <= covered && ok(static_cast<const MapsEntry&>(e));
    covered = e.end;
  }
  std::fclose(f);
  return good && covered >= hi;
}

}  // namespace braid
