// The per-rank trace file of BRAID_TRACE: what a communicator's TraceSink (core/trace.h) holds,
// written as Chrome trace event JSON (Perfetto and chrome://tracing open it) to
// <dir>/comm<id>.rank<r>.json, replaced whole (a temporary file renamed) at each write. Times
// are this rank's monotonic clock in microseconds; otherData.braid carries the rank, the
// communicator, the clock offset to its rank 0 and its error, which braid-trace merge uses.
// It is the one piece of tracing that touches files; the runtime calls it at destroy, abort,
// the dump signal and a call's error.
//
// Thread-safety: writes of one communicator's file are serialised inside.
#pragma once

#include <string>

#include "core/status.h"

struct braidComm;

namespace braid {

// What the file says about its communicator beyond the events.
struct TraceFileInfo {
  std::string dir;
  std::string commId;  // alike on every rank of the communicator (a hash of its unique id)
  int rank = 0;
  int nranks = 1;
  std::string host;
  int pid = 0;
};

// Writes comm's trace now; `why` ("destroy", "abort", "signal", "error: ...") goes in the
// file. Ok without a sink.
Status writeTraceFile(const braidComm* comm, const std::string& why);

}  // namespace braid
