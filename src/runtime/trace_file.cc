#include "runtime/trace_file.h"

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <vector>

#include "core/clock.h"
#include "core/trace.h"
#include "exec/reduce.h"
#include "runtime/communicator.h"

namespace braid {
namespace {

// Thread ids of the timeline's rows within a rank's process.
constexpr int kCallsTid = 1;
constexpr int kStepsTid = 2;
constexpr int kDeviceTid = 3;

void appendEscaped(std::string* out, const char* s) {
  for (; *s != '\0'; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
}

std::string quoted(const char* s) {
  std::string out = "\"";
  appendEscaped(&out, s);
  return out + "\"";
}

std::string usText(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%" PRIu64 ".%03u", ns / 1000, static_cast<unsigned>(ns % 1000));
  return buf;
}

const char* stateName(TraceEvent::State s) {
  switch (s) {
    case TraceEvent::State::kDone:
      return "done";
    case TraceEvent::State::kFailed:
      return "failed";
    case TraceEvent::State::kInFlight:
      return "in flight";
  }
  return "";
}

// One event as a Chrome trace object; `nowNs` ends what is still in flight.
std::string eventJson(const TraceEvent& e, int rank, uint64_t nowNs) {
  const uint64_t end = e.state == TraceEvent::State::kInFlight ? nowNs : e.endNs;
  const uint64_t dur = end > e.startNs ? end - e.startNs : 0;
  std::string out = "{\"name\":" + quoted(e.name) + ",\"pid\":" + std::to_string(rank);
  std::string args;
  auto arg = [&](const char* key, const std::string& value) {
    args += args.empty() ? "" : ",";
    args += std::string("\"") + key + "\":" + value;
  };
  int tid = kCallsTid;
  const char* cat = "call";
  switch (e.kind) {
    case TraceEvent::Kind::kCall:
    case TraceEvent::Kind::kDevice:
      tid = e.kind == TraceEvent::Kind::kCall ? kCallsTid : kDeviceTid;
      cat = e.kind == TraceEvent::Kind::kCall ? "call" : "device";
      arg("seq", std::to_string(e.seq));
      arg("bytes", std::to_string(e.bytes));
      if (e.datatype >= 0)
        arg("dtype", quoted(datatypeName(static_cast<braidDataType_t>(e.datatype))));
      if (e.op >= 0) arg("op", quoted(redOpName(static_cast<braidRedOp_t>(e.op))));
      arg("algorithm", quoted(e.algorithm));
      arg("executor", quoted(e.executor));
      arg("issued_us", usText(e.issuedNs != 0 ? e.issuedNs : e.startNs));
      arg("state", quoted(stateName(e.state)));
      break;
    case TraceEvent::Kind::kStep:
      tid = kStepsTid;
      cat = "step";
      arg("seq", std::to_string(e.seq));
      arg("bytes", std::to_string(e.bytes));
      if (e.sendPeer >= 0) arg("send_peer", std::to_string(e.sendPeer));
      if (e.recvPeer >= 0) arg("recv_peer", std::to_string(e.recvPeer));
      arg("wait_us", usText(e.waitNs));
      break;
    case TraceEvent::Kind::kMarker:
      cat = "marker";
      break;
  }
  out += ",\"tid\":" + std::to_string(tid) + ",\"cat\":\"" + cat + "\",\"ts\":" + usText(e.startNs);
  if (e.kind == TraceEvent::Kind::kMarker) {
    out += ",\"ph\":\"i\",\"s\":\"p\"";
  } else {
    out += ",\"ph\":\"X\",\"dur\":" + usText(dur);
  }
  return out + ",\"args\":{" + args + "}}";
}

std::string metadataJson(const char* what, int rank, int tid, const std::string& name) {
  return "{\"name\":\"" + std::string(what) + "\",\"ph\":\"M\",\"pid\":" + std::to_string(rank) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + quoted(name.c_str()) + "}}";
}

std::string fileText(const TraceSink& sink, const TraceFileInfo& info, const std::string& why) {
  const uint64_t now = nowNs();
  const std::vector<TraceEvent> events = sink.snapshot();
  const TraceClock clock = sink.clock();
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  const int r = info.rank;
  out += metadataJson("process_name", r, 0, "rank " + std::to_string(r)) + ",\n";
  out += metadataJson("thread_name", r, kCallsTid, "calls") + ",\n";
  out += metadataJson("thread_name", r, kStepsTid, "steps") + ",\n";
  out += metadataJson("thread_name", r, kDeviceTid, "device enqueues");
  for (const TraceEvent& e : events) out += ",\n" + eventJson(e, r, now);
  char meta[512];
  std::snprintf(meta, sizeof(meta),
                "\n],\"otherData\":{\"braid\":{\"version\":1,\"comm\":\"%s\",\"rank\":%d,"
                "\"nranks\":%d,\"pid\":%d,\"clock_offset_ns\":%" PRId64
                ",\"clock_error_ns\":%" PRIu64
                ",\"clock_samples\":%d,\"written_us\":%s,"
                "\"capacity\":%zu,\"dropped\":%" PRIu64 ",",
                info.commId.c_str(), r, info.nranks, info.pid, clock.offsetNs, clock.errorNs,
                clock.samples, usText(now).c_str(), sink.capacity(), sink.dropped());
  out += meta;
  out += "\"host\":" + quoted(info.host.c_str()) + ",\"why\":" + quoted(why.c_str()) + "}}}\n";
  return out;
}

}  // namespace

Status writeTraceFile(const braidComm* comm, const std::string& why) {
  const TraceSink* sink = comm->comm->trace();
  if (sink == nullptr) return Status::ok();
  std::lock_guard<std::mutex> lock(comm->traceFileMu);
  const TraceFileInfo& info = comm->traceInfo;
  const std::string text = fileText(*sink, info, why);
  const std::string path =
      info.dir + "/comm" + info.commId + ".rank" + std::to_string(info.rank) + ".json";
  const std::string tmp = path + ".tmp" + std::to_string(info.pid);
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    return systemError("BRAID_TRACE: cannot write " + tmp);
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !wrote) {
    const int err = errno;
    unlink(tmp.c_str());
    return systemError("BRAID_TRACE: writing " + tmp + " failed", err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return systemError("BRAID_TRACE: cannot rename " + tmp + " to " + path);
  }
  return Status::ok();
}

}  // namespace braid
