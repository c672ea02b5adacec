// A communicator's recently used schedules: building one is cheap, but not free.
#pragma once

#include "algorithms/file/schedule_file.h"
#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "runtime/communicator.h"

namespace braid {

// comm's schedule for (args, alg), a window schedule where args.windowElems is set
// (algorithms/schedule.h): built at its first use (and then written by
// BRAID_SCHEDULE_DUMP, runtime/schedule_dump.h, naming `executor`) and kept among the
// communicator's recent ones; all-to-all-v's, whose counts change by call, built (and
// written) at every call. Valid until the next call. The caller holds comm->opMu.
const algo::Schedule& scheduleFor(braidComm* comm, const algo::CollArgs& args, algo::Algorithm alg,
                                  const char* executor = "host");

// comm's schedule of loaded algorithm `file` for (args), alike (built at first use,
// kept among the recent ones, written by BRAID_SCHEDULE_DUMP). Valid until the next call;
// the caller holds comm->opMu.
Expected<const algo::Schedule*> userScheduleFor(braidComm* comm, const algo::CollArgs& args,
                                               const algo::AlgoFile& file);

}  // namespace braid
