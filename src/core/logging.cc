#include "core/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/env.h"

namespace braid {
namespace {

std::atomic<int> gRank{-1};

LogLevel parseLevel(const std::string& s) {
  if (s.empty()) return LogLevel::kWarn;
  if (strcasecmp(s.c_str(), "NONE") == 0) return LogLevel::kNone;
  if (strcasecmp(s.c_str(), "VERSION") == 0) return LogLevel::kVersion;
  if (strcasecmp(s.c_str(), "INFO") == 0) return LogLevel::kInfo;
  if (strcasecmp(s.c_str(), "TRACE") == 0) return LogLevel::kTrace;
  return LogLevel::kWarn;
}

// Expands %h (host name) and %p (pid) in BRAID_DEBUG_FILE, as NCCL does.
std::string expandPath(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') {
        char host[256] = {0};
        gethostname(host, sizeof(host) - 1);
        out += host;
      } else if (c == 'p') {
        out += std::to_string(getpid());
      } else {
        out += '%';
        out += c;
      }
    } else {
      out += pattern[i];
    }
  }
  return out;
}

FILE* logFile() {
  static FILE* file = [] {
    std::string path = envString("BRAID_DEBUG_FILE");
    if (path.empty()) return stderr;
    FILE* f = std::fopen(expandPath(path).c_str(), "a");
    return f ? f : stderr;
  }();
  return file;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
    default: return "VERSION";
  }
}

}  // namespace

LogLevel logLevel() {
  static LogLevel level = parseLevel(envString("BRAID_DEBUG"));
  return level;
}

void setLogRank(int rank) { gRank.store(rank, std::memory_order_relaxed); }

void logMessage(LogLevel level, const char* file, int line, const char* fmt, ...) {
  static std::mutex mu;
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  char text[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  std::lock_guard<std::mutex> lock(mu);
  int rank = gRank.load(std::memory_order_relaxed);
  if (level >= LogLevel::kTrace) {
    std::fprintf(logFile(), "%s:%d:%d [braid %s] %s:%d %s\n", host, getpid(), rank,
                 levelName(level), base, line, text);
  } else {
    std::fprintf(logFile(), "%s:%d:%d [braid %s] %s\n", host, getpid(), rank, levelName(level),
                 text);
  }
  std::fflush(logFile());
}

}  // namespace braid
