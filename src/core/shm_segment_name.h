// How shared-memory segments are named: /braid-<creator pid>-<its pid namespace>-<random>.
// Header-only and in core: the shm transport names its segments by it, and braidrun, which
// links no part of the library, removes its dead ranks' segments by the same prefix.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <string>

namespace braid {

// This process's pid namespace as hex (the inode of /proc/self/ns/pid), or "" where /proc
// does not say. Pids mean the same process only within one namespace.
inline const std::string& shmPidNamespace() {
  static const std::string ns = [] {
    struct stat st {};
    if (stat("/proc/self/ns/pid", &st) != 0) return std::string();
    char text[24];
    std::snprintf(text, sizeof(text), "%llx", static_cast<unsigned long long>(st.st_ino));
    return std::string(text);
  }();
  return ns;
}

// "braid-<pid>-<namespace>-": the names (without their leading '/') of every segment that
// process `pid` of this process's pid namespace created.
inline std::string shmSegmentPrefix(long pid) {
  const std::string& ns = shmPidNamespace();
  return "braid-" + std::to_string(pid) + "-" + (ns.empty() ? "0" : ns) + "-";
}

}  // namespace braid
