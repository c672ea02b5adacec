#include "runtime/issue.h"

#include <algorithm>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/stream.h"
#include "core/stream_lanes.h"
#include "cuda/device.h"
#include "runtime/device_calls.h"
#include "runtime/host_calls.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"
#include "runtime/premul.h"

namespace braid {
namespace {

// A thread's open group: its calls, and the communicator and stream each came on. One
// thread-local, reached once per entry point; the vectors keep their capacity between
// groups, so that a small group allocates nothing.
struct Target {
  braidComm* comm;
  braidStream_t stream;
};
struct OpenGroup {
  int depth = 0;
  std::vector<Call> calls;
  std::vector<Target> targets;  // per call
};
thread_local OpenGroup tGroup;

// Whether calls on `stream` run now on this thread with nothing of a device to order: the
// NULL stream of a process without one.
bool hostNow(braidStream_t stream) {
  return stream == nullptr && !(cuda::compiled() && cuda::hasDevice());
}

// What runOps refuses of a call's sends and receives (unpaired sends to this rank,
// overlapping buffers), refused before anything runs: before a host stream queues them
// (its worker could only raise it as the communicator's error), before peers' staged
// calls count them, and before a group's collectives, which runOps runs first.
Status checkPointToPoint(const std::vector<Call>& ops, int rank) {
  thread_local std::vector<const Call*> p2p;  // kept, so that a small group allocates nothing
  p2p.clear();
  for (const Call& op : ops) {
    if (op.kind != Call::Kind::kCollective) p2p.push_back(&op);
  }
  return p2p.empty() ? Status::ok() : pairSelfSends(p2p, rank).status();
}

// issueOps once the call is counted; `ops` is taken only by a stream (a caller on the NULL
// stream keeps the vector and its capacity).
braidResult_t issueCounted(braidComm* comm, std::vector<Call>& ops, braidStream_t stream) {
  if (usesCuda(ops, stream)) return issueCudaOps(comm, std::move(ops), stream);
  if (Status st = checkHostScalars(ops); !st.isOk()) return finish(comm, st);
  if (Status st = checkPointToPoint(ops, comm->comm->rank()); !st.isOk()) return finish(comm, st);
  hostCallIssued(comm, ops);  // its part, for peers' staged calls
  waitForStagedCalls(comm);   // host collectives in issue order on every rank
  if (stream == nullptr) return finish(comm, runOps(comm, ops));
  comm->inflight.fetch_add(1);
  stream->impl->enqueue([comm, ops = std::move(ops)] {
    Status result = runOps(comm, ops);
    if (!result.isOk()) {
      comm->comm->raiseAsyncError(result);
      finish(comm, result);
    }
    comm->inflight.fetch_sub(1);
  });
  return braidSuccess;
}

}  // namespace

braidResult_t issueOne(braidComm* comm, Call&& op, braidStream_t stream) {
  // The common case, a host call on the NULL stream, allocates nothing (and starts as it is
  // issued: a trace reads the clock once).
  if (hostNow(stream)) return finish(comm, runOps(comm, &op, 1));
  if (comm->comm->trace() != nullptr) op.issuedNs = nowNs();
  std::vector<Call> ops;
  ops.push_back(std::move(op));
  return issueOps(comm, std::move(ops), stream);
}

braidResult_t issueOps(braidComm* comm, std::vector<Call>&& ops, braidStream_t stream) {
  // Calls that run now hold the communicator's operation lock (runOps), which a destroy or
  // an abort takes before it frees comm, as issueOne's do; their sends and receives need
  // a check first only behind collectives (runOps plans them before anything moves). The
  // others are counted, so that an abort from another thread cannot free comm under this
  // call.
  if (hostNow(stream)) {
    const bool collectives = std::any_of(
        ops.begin(), ops.end(), [](const Call& op) { return op.kind == Call::Kind::kCollective; });
    if (collectives) {
      if (Status st = checkPointToPoint(ops, comm->comm->rank()); !st.isOk()) {
        return finish(comm, st);
      }
    }
    return finish(comm, runOps(comm, ops));
  }
  if (!acquireComm(comm)) {
    return finish(nullptr,
                  invalidArgument("comm was destroyed or aborted while the call was being issued"));
  }
  braidResult_t r = issueCounted(comm, ops, stream);
  releaseComm(comm);
  return r;
}

bool queueInGroup(braidComm* comm, Call&& op, braidStream_t stream) {
  OpenGroup& g = tGroup;
  if (g.depth == 0) return false;
  if (comm->comm->trace() != nullptr) op.issuedNs = nowNs();
  g.calls.push_back(std::move(op));
  g.targets.push_back({comm, stream});
  return true;
}

void groupStart() { ++tGroup.depth; }

namespace {

// One communicator's calls of a group, unless it was destroyed since they were queued.
braidResult_t issueQueued(braidComm* comm, std::vector<Call>&& ops, braidStream_t stream) {
  return isLiveComm(comm) ? issueOps(comm, std::move(ops), stream)
                          : finish(nullptr, invalidArgument("a group used a destroyed comm"));
}

// One issue per communicator, in the order each was first used. Issues on one stream (a
// CUDA or a host stream) run one after another in that order, so the stream holds their
// work in the same order on every rank; issues on different streams, and each on the NULL
// stream, run side by side, a thread each beyond the first. Ranks of one process (a
// thread's communicators, as ncclCommInitAll makes them) then meet where a call waits for
// every rank: host buffers on the NULL stream, the device windows' set-up. The usual
// group, one communicator on one stream, is issued from `calls` itself.
braidResult_t issueGroup(std::vector<Call>& calls, const std::vector<Target>& targets) {
  if (calls.empty()) return braidSuccess;
  bool one = true;
  for (const Target& t : targets) {
    one = one && t.comm == targets.front().comm && t.stream == targets.front().stream;
  }
  if (one) return issueQueued(targets.front().comm, std::move(calls), targets.front().stream);
  struct Issue {
    braidComm* comm;
    braidStream_t stream;  // the communicator's first call's
    std::vector<Call> ops;
  };
  std::vector<Issue> issues;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Target& t = targets[i];
    auto it = std::find_if(issues.begin(), issues.end(),
                           [&](const Issue& is) { return is.comm == t.comm; });
    if (it == issues.end()) it = issues.insert(issues.end(), Issue{t.comm, t.stream, {}});
    it->ops.push_back(std::move(calls[i]));
  }
  const std::vector<std::vector<size_t>> lanes =  // indices into issues, run in order
      laneByStream(issues.size(), [&](size_t i) { return issues[i].stream; });
  std::vector<braidResult_t> results(issues.size(), braidSuccess);
  std::vector<std::string> errors(issues.size());
  auto run = [&](const std::vector<size_t>& lane) {
    for (size_t i : lane) {
      Issue& is = issues[i];
      results[i] = issueQueued(is.comm, std::move(is.ops), is.stream);
      if (results[i] != braidSuccess) errors[i] = tLastError;
    }
  };
  // Each thread on the caller's CUDA device, as the issues would be on the caller's thread.
  int device = -1;
  if (lanes.size() > 1 && cuda::hasDevice()) {
    Expected<int> d = cuda::currentDevice();
    if (d.isOk()) device = d.value();
  }
  std::vector<std::thread> threads;
  for (size_t l = 1; l < lanes.size(); ++l) {
    threads.emplace_back([&, l] {
      if (device >= 0) (void)cuda::setCurrentDevice(device);
      run(lanes[l]);
    });
  }
  if (!lanes.empty()) run(lanes[0]);
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < issues.size(); ++i) {
    if (results[i] == braidSuccess) continue;
    tLastError = errors[i];  // the thread that issued it may have been another
    return results[i];
  }
  return braidSuccess;
}

}  // namespace

// braidGroupEnd: the outermost issues what the group queued (issueGroup).
braidResult_t groupEnd() {
  OpenGroup& g = tGroup;
  if (g.depth == 0) {
    return finish(nullptr, invalidUsage("braidGroupEnd without a matching braidGroupStart"));
  }
  if (--g.depth > 0) return braidSuccess;
  // Taken out of the thread's group while they are issued, so that the group is empty
  // whatever the issue does, and their capacity handed back after, for the next group. A
  // stream takes the calls it runs out of `calls`.
  std::vector<Call> calls;
  std::vector<Target> targets;
  calls.swap(g.calls);
  targets.swap(g.targets);
  const braidResult_t r = issueGroup(calls, targets);
  calls.clear();
  targets.clear();
  if (g.calls.empty()) calls.swap(g.calls);
  if (g.targets.empty()) targets.swap(g.targets);
  return r;
}

}  // namespace braid
