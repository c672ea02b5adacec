// BRAID_TRACE on a communicator: the sink made at init (with rank 0's clock offset), what the
// host and device paths record around each call, and the writes of the trace file at the
// points the runtime decides (a call's error here; destroy, abort and the dump signal in
// communicator.cc and dump.cc). The sink is core/trace.h; the file, runtime/trace_file.h.
//
// Every helper but setUpTracing and traceMarker is called only where comm->comm->trace() is
// not null.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trace.h"
#include "exec/call.h"
#include "exec/host/fifo_executor.h"

struct braidComm;

namespace braid {

// Turns tracing on when BRAID_TRACE names a directory (made if absent): the sink of
// BRAID_TRACE_EVENTS events, the clock offset to rank 0. Every rank calls it.
Status setUpTracing(braidComm* comm);

// The call `desc` describes (of `op`, run by `executor`) starts now.
void traceCallStarts(braidComm* comm, const Call* op, const OpDesc& desc, const char* executor);
// The call begun last ends with `result`; an error writes the trace file now, so a job that
// fails or hangs on a dead peer leaves its trace naming the call.
void traceCallEnds(braidComm* comm, const Status& result);
// A marker named `name` (braidTraceMarker) now; nothing when comm does not trace.
void traceMarker(braidComm* comm, const char* name);
// Device calls as the host sees them: deviceEvents() before `calls` are enqueued (an
// executor may move from them), traceDeviceCalls() once they are, ending them now.
std::vector<TraceEvent> deviceEvents(braidComm* comm, const std::vector<Call>& calls,
                                     const char* executor);
void traceDeviceCalls(braidComm* comm, std::vector<TraceEvent>* events);

}  // namespace braid
