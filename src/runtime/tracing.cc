#include "runtime/tracing.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "core/clock.h"
#include "core/env.h"
#include "core/host.h"
#include "core/logging.h"
#include "core/trace.h"
#include "exec/reduce.h"
#include "runtime/communicator.h"
#include "runtime/trace_file.h"

namespace braid {
namespace {

// Ping-pongs with rank 0 at init: the fastest of 8 bounds the offset's error on a loaded
// machine to a few microseconds on one node.
constexpr int kClockRounds = 8;
// 4096 events (360 KB) cost a 64 KiB all-reduce of 4 ranks about 4-8%, 65536 (5.8 MB) 17%:
// the ring's writes evict the call's data (perf/trace/trace_overhead.py).
constexpr int64_t kDefaultEvents = 4096;

// Alike on every rank of a communicator and apart between communicators: rank 0's address
// (each communicator listens on its own port) and pid, hashed (FNV-1a).
std::string commIdOf(const Comm& c) {
  const std::string key = c.peer(0).listenAddr.toString() + "/" + std::to_string(c.peer(0).pid) +
                          "/" + c.peer(0).hostName;
  uint64_t h = uint64_t{1469598103934665603};
  for (unsigned char ch : key) h = (h ^ ch) * uint64_t{1099511628211};
  char out[17];
  std::snprintf(out, sizeof(out), "%012" PRIx64, static_cast<uint64_t>(h & 0xffffffffffff));
  return out;
}

Status makeDirectory(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) {
      return systemError("BRAID_TRACE: cannot make the directory " + part);
    }
  }
  return Status::ok();
}

}  // namespace

Status setUpTracing(braidComm* comm) {
  const std::string dir = envString("BRAID_TRACE");
  Comm& c = *comm->comm;
  if (dir.empty()) return Status::ok();
  BRAID_TRY(makeDirectory(dir));
  const int64_t events = envInt("BRAID_TRACE_EVENTS", kDefaultEvents);
  auto sink =
      std::make_unique<TraceSink>(static_cast<size_t>(events > 0 ? events : kDefaultEvents));
  sink->setClock(c.measureClock(kClockRounds));
  comm->traceInfo.dir = dir;
  comm->traceInfo.commId = commIdOf(c);
  comm->traceInfo.rank = c.rank();
  comm->traceInfo.nranks = c.nranks();
  comm->traceInfo.host = hostName();
  comm->traceInfo.pid = static_cast<int>(getpid());
  const TraceClock clock = sink->clock();
  BRAID_INFO("BRAID_TRACE: rank %d records into %s (comm %s, clock offset to rank 0 %" PRId64
             " ns +- %" PRIu64 " ns)",
             c.rank(), dir.c_str(), comm->traceInfo.commId.c_str(), clock.offsetNs, clock.errorNs);
  c.setTrace(std::move(sink));
  return Status::ok();
}

void traceCallStarts(braidComm* comm, const Call* op, const OpDesc& desc, const char* executor) {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kCall;
  e.name = desc.collective;
  e.algorithm = desc.algorithm;
  e.executor = executor;
  e.seq = desc.seq;
  e.bytes = desc.bytes;
  e.datatype = static_cast<int16_t>(desc.datatype);
  if (op != nullptr && op->kind == Call::Kind::kCollective &&
      (op->collective == algo::Collective::kAllReduce ||
       op->collective == algo::Collective::kReduce ||
       op->collective == algo::Collective::kReduceScatter)) {
    e.op = static_cast<int16_t>(desc.op);
  }
  e.startNs = nowNs();
  e.issuedNs = op != nullptr && op->issuedNs != 0 ? op->issuedNs : e.startNs;
  comm->comm->trace()->beginCall(e);
}

void traceCallEnds(braidComm* comm, const Status& result) {
  comm->comm->trace()->endCall(nowNs(), result.isOk());
  if (result.isOk()) return;
  Status st = writeTraceFile(comm, "error: " + result.message());
  if (!st.isOk()) BRAID_WARN("%s", st.message().c_str());
}

void traceMarker(braidComm* comm, const char* name) {
  TraceSink* trace = comm->comm->trace();
  if (trace == nullptr) return;
  TraceEvent e;
  e.kind = TraceEvent::Kind::kMarker;
  e.name = trace->intern(std::string(name, strnlen(name, 255)));
  e.seq = comm->comm->postedSeq();
  e.startNs = nowNs();
  e.endNs = e.startNs;
  trace->record(e);
}

std::vector<TraceEvent> deviceEvents(braidComm* comm, const std::vector<Call>& calls,
                                     const char* executor) {
  std::vector<TraceEvent> out;
  const uint64_t startNs = nowNs();
  for (const Call& op : calls) {
    TraceEvent e;
    e.kind = TraceEvent::Kind::kDevice;
    e.name = op.kind == Call::Kind::kSend   ? "send"
             : op.kind == Call::Kind::kRecv ? "recv"
                                            : algo::collectiveName(op.collective);
    e.executor = executor;
    e.bytes = op.count * datatypeSize(op.datatype);
    e.datatype = static_cast<int16_t>(op.datatype);
    e.sendPeer = op.kind == Call::Kind::kSend ? op.peer : -1;
    e.recvPeer = op.kind == Call::Kind::kRecv ? op.peer : -1;
    e.seq = comm->comm->postedSeq();
    e.issuedNs = op.issuedNs != 0 ? op.issuedNs : startNs;
    e.startNs = startNs;
    out.push_back(e);
  }
  return out;
}

void traceDeviceCalls(braidComm* comm, std::vector<TraceEvent>* events) {
  const uint64_t endNs = nowNs();
  for (TraceEvent& e : *events) {
    e.endNs = endNs;
    comm->comm->trace()->record(e);
  }
}

}  // namespace braid
