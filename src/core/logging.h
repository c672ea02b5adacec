// Logging: one line per event to stderr (or BRAID_DEBUG_FILE), prefixed with
// host, pid and, where known, the rank. Levels follow NCCL_DEBUG: NONE, VERSION,
// WARN (default), INFO, TRACE. Thread-safe.
#pragma once

#include <cstdarg>

namespace braid {

enum class LogLevel { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

// The level from BRAID_DEBUG (or NCCL_DEBUG), read once.
LogLevel logLevel();
// Sets the rank that prefixes this process's lines (-1: unknown).
void setLogRank(int rank);
void logMessage(LogLevel level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace braid

#define BRAID_LOG(level, ...)                                                  \
  do {                                                                         \
    if (::braid::logLevel() >= ::braid::LogLevel::level)                       \
      ::braid::logMessage(::braid::LogLevel::level, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define BRAID_WARN(...) BRAID_LOG(kWarn, __VA_ARGS__)
#define BRAID_INFO(...) BRAID_LOG(kInfo, __VA_ARGS__)
#define BRAID_TRACE(...) BRAID_LOG(kTrace, __VA_ARGS__)
