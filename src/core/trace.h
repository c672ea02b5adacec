// TraceSink: the events one rank records on one communicator under BRAID_TRACE, kept in a
// bounded ring (the last BRAID_TRACE_EVENTS). The runtime records each call (issued, started,
// ended), the executors each step they run, the device path each enqueue; a marker
// (braidTraceMarker) names a point of the caller's program. It knows nothing of files:
// runtime/trace_file.h writes what snapshot() returns.
//
// Off (no sink, Comm::trace() is null), recording costs its caller one predictable branch.
// On, a record takes a lock no thread holds long (a copy of a few words).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace braid {

struct TraceEvent {
  enum class Kind : uint8_t {
    kCall,    // a collective or a group's sends and receives, start to end
    kStep,    // one step (or a batch of steps that move together) of a call's schedule
    kDevice,  // a device call enqueued on its stream, as the host sees it
    kMarker,  // a point the program named (an instant)
  };
  enum class State : uint8_t { kDone, kFailed, kInFlight };
  Kind kind = Kind::kCall;
  State state = State::kDone;
  int16_t datatype = -1;  // braidDataType_t, -1: none
  int16_t op = -1;        // braidRedOp_t, -1: none
  int32_t sendPeer = -1;
  int32_t recvPeer = -1;
  uint64_t issuedNs = 0;  // calls: when the program made it (0: as startNs)
  uint64_t startNs = 0;
  uint64_t endNs = 0;
  uint64_t seq = 0;  // the communicator's operation number (calls, their steps)
  uint64_t bytes = 0;
  uint64_t waitNs = 0;  // steps: the part spent waiting for peers
  // Names that outlive the sink: string literals, or strings intern() keeps.
  const char* name = "";       // collective, step kind, marker
  const char* algorithm = "";  // calls
  const char* executor = "";   // calls
};

// Rank 0's clock as this rank measured it at init: rank0Ns ~ localNs + offsetNs, within
// errorNs (half the fastest round trip of the ping-pongs).
struct TraceClock {
  int64_t offsetNs = 0;
  uint64_t errorNs = 0;
  int samples = 0;
};

class TraceSink {
 public:
  explicit TraceSink(size_t capacity);

  void record(const TraceEvent& e);
  // The call now running on this communicator (calls run one at a time): kept apart from
  // the ring until it ends, so a trace written while it waits names it as in flight.
  void beginCall(const TraceEvent& e);
  // Ends the call begun last: records it with its end time and state.
  void endCall(uint64_t endNs, bool ok);
  // A copy of `s` that lives as long as the sink (markers' names; past 4096 distinct
  // names, "marker").
  const char* intern(const std::string& s);

  // The ring's events, oldest first, and the call in flight (kInFlight) if any.
  std::vector<TraceEvent> snapshot() const;
  uint64_t dropped() const;
  size_t capacity() const { return capacity_; }
  void setClock(const TraceClock& c);
  TraceClock clock() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::vector<TraceEvent> ring_;
  size_t next_ = 0;  // where the next event goes once the ring is full
  uint64_t recorded_ = 0;
  bool open_ = false;
  TraceEvent current_;
  TraceClock clock_;
  std::set<std::string> names_;
};

}  // namespace braid
