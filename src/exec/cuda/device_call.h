// What every device executor asks of a call: the bytes it touches on this rank, how its
// sends and receives run (sends to this rank copied on the stream), a device program's step at
// resolved addresses, and the refusal of what a CUDA graph's replay could not run.
#pragma once

#include <string>
#include <vector>

#include "exec/call.h"
#include "exec/cuda/device_program.h"
#include "exec/cuda/staging.h"

namespace braid {

// The bytes `op` reads and writes on this rank, as braid.h lays out each call (its send
// buffer, then its receive buffer, which is marked written; a buffer a rank does not use
// has 0 bytes). Exposed for tests.
std::vector<StagedRegion> regionsOf(const Call& op, int rank, int nranks);

// pointToPointPlan (exec/call.h) over the sends and receives of `ops`; enqueueCopies
// enqueues a plan's copies on `stream`.
Expected<PointToPointPlan> pointToPointPlan(const std::vector<Call>& ops, int rank);
Status enqueueCopies(const std::vector<PointToPointPlan::Copy>& copies, void* stream);

// A copy or reduction of a device program (exec/cuda/device_program.h) at resolved addresses,
// on `stream`: a copy is nothing when dst is the source; a reduction of op's datatype and
// operation (avg sums until the final value, divided by nranks).
// (runtime/device/lowered_schedule.cc)
Status enqueueData(const DeviceOp& d, void* dst, const void* const* srcs, const Call& op,
                   int nranks, void* stream);

// braidInvalidUsage for a call on a stream capturing a CUDA graph that a replay could not
// run (`why`): refused before anything is enqueued, so the communicator and the capture
// are as they were.
Status captureRefusal(const std::string& why);

}  // namespace braid
