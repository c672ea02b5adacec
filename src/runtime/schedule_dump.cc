#include "runtime/schedule_dump.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>

#include "algorithms/schedule_json.h"
#include "core/env.h"
#include "core/logging.h"

namespace braid {

namespace {

void dumpNamed(const algo::Schedule& schedule, const algo::CollArgs& args, const char* name,
               const char* executor) {
  static const std::string prefix = envString("BRAID_SCHEDULE_DUMP");
  if (prefix.empty()) return;
  static std::mutex mu;
  static bool warned = false;
  const std::string text = algo::scheduleJson(schedule, args, name, executor);
  const std::string path = prefix + "." + std::to_string(getpid()) + ".json";
  std::lock_guard<std::mutex> lock(mu);
  FILE* f = std::fopen(path.c_str(), "a");
  const bool written = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if ((f == nullptr || std::fclose(f) != 0 || !written) && !warned) {
    warned = true;
    BRAID_WARN("BRAID_SCHEDULE_DUMP: cannot write %s; schedules are not dumped", path.c_str());
  }
}

}  // namespace

void dumpSchedule(const algo::Schedule& schedule, const algo::CollArgs& args,
                  algo::Algorithm algorithm, const char* executor) {
  dumpNamed(schedule, args, algo::algorithmName(algorithm), executor);
}

void dumpUserSchedule(const algo::Schedule& schedule, const algo::CollArgs& args,
                      const char* name) {
  dumpNamed(schedule, args, name, "host");
}

}  // namespace braid
