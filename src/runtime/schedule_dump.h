// BRAID_SCHEDULE_DUMP=<prefix>: every schedule a call builds is appended, as JSON
// (algorithms/schedule_json.h), to <prefix>.<pid>.json. Schedules are built once per
// (collective, algorithm, count, type size, layout, root, step size) and cached, so a
// training loop writes each of them once; all-to-all-v, whose counts change by call,
// writes each call's. The CUDA executor's schedules say "executor": "cuda". A file that
// cannot be written is a WARN line, once; the call goes on. Thread-safe.
#pragma once

#include "algorithms/registry.h"
#include "algorithms/schedule.h"

namespace braid {

void dumpSchedule(const algo::Schedule& schedule, const algo::CollArgs& args,
                  algo::Algorithm algorithm, const char* executor);
// A loaded algorithm's schedule (runtime/user_algorithms.h), named as its file names it.
void dumpUserSchedule(const algo::Schedule& schedule, const algo::CollArgs& args,
                      const char* name);

}  // namespace braid
