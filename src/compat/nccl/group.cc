#include "compat/nccl/group.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <thread>

#include "compat/nccl/profiler.h"
#include "core/stream_lanes.h"

namespace braid::nccl {
namespace {

thread_local int tDepth = 0;
thread_local std::vector<Call> tCalls;
struct GroupInit {
  ncclComm* comm;  // NULL: the creation makes none
  std::shared_ptr<Job> job;
  bool blocking;
};
thread_local std::vector<GroupInit> tInits;
struct DeferredOp {
  ncclComm* comm;
  braidRedOp_t op;
};
thread_local std::vector<DeferredOp> tDeferredOps;

struct Bucket {
  ncclComm* comm;
  std::vector<Call> calls;
};

std::vector<Bucket> byComm(std::vector<Call> calls) {
  std::vector<Bucket> out;
  for (Call& c : calls) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Bucket& b) { return b.comm == c.comm; });
    if (it == out.end()) {
      out.push_back({c.comm, {}});
      it = out.end() - 1;
    }
    it->calls.push_back(c);
  }
  return out;
}

// One communicator's calls as one Braid group. An error of one call (a bad
// buffer Braid found) is returned; the group's other calls still run.
ncclResult_t runBucket(const Bucket& b) {
  CommGuard guard(b.comm, "ncclGroupEnd");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  const DeviceScope scope(b.comm->device);  // a thread of runBuckets' starts on device 0
  const ProfiledCalls profiled(b.comm, inner, b.calls.data(), b.calls.size(), true);
  braidResult_t first = braidGroupStart();
  for (const Call& c : b.calls) {
    braidResult_t one = issueCall(inner, c);
    if (first == braidSuccess) first = one;
  }
  braidResult_t end = braidGroupEnd();
  if (first == braidSuccess) first = end;
  return fromBraid(b.comm, first);
}

// Waits for the group's blocking creations; InProgress for non-blocking ones
// still running.
ncclResult_t finishInits(const std::vector<GroupInit>& inits) {
  ncclResult_t result = ncclSuccess;
  for (const GroupInit& init : inits) {
    if (init.blocking) waitJob(*init.job);
    ncclResult_t r = ncclSuccess;
    if (init.comm != nullptr) {
      CommGuard guard(init.comm, "ncclGroupEnd");
      if (!guard.ok()) continue;  // aborted meanwhile
      r = adoptJob(init.comm);
    } else {
      std::lock_guard<std::mutex> lock(init.job->mu);
      r = init.job->result;
    }
    if (r != ncclSuccess && (result == ncclSuccess || result == ncclInProgress)) result = r;
  }
  return result;
}

// The buckets side by side, a thread each beyond the first (ranks of one process meet
// where a call waits for every rank), except that buckets whose first calls share a stream
// run one after another on one thread, in order: the stream then holds their work in the
// same order on every rank, as braidGroupEnd orders them.
ncclResult_t runBuckets(const std::vector<Bucket>& buckets) {
  std::vector<ncclResult_t> results(buckets.size(), ncclSuccess);
  const std::vector<std::vector<size_t>> lanes =
      laneByStream(buckets.size(), [&](size_t i) { return buckets[i].calls.front().stream; });
  auto run = [&](const std::vector<size_t>& lane) {
    for (size_t i : lane) results[i] = runBucket(buckets[i]);
  };
  std::vector<std::thread> threads;
  for (size_t l = 1; l < lanes.size(); ++l) threads.emplace_back(run, std::cref(lanes[l]));
  if (!lanes.empty()) run(lanes[0]);
  for (std::thread& t : threads) t.join();
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

braidCollective_t collectiveOf(Kind k) {
  switch (k) {
    case Kind::kAllReduce: return braidCollAllReduce;
    case Kind::kAllGather: return braidCollAllGather;
    case Kind::kReduceScatter: return braidCollReduceScatter;
    case Kind::kBroadcast: return braidCollBroadcast;
    case Kind::kReduce: return braidCollReduce;
    case Kind::kGather: return braidCollGather;
    case Kind::kScatter: return braidCollScatter;
    case Kind::kAlltoAll: return braidCollAlltoAll;
    default: return braidCollAlltoAllv;
  }
}

// The cost model's time for a communicator's calls: each collective as
// priced by braidCommGetAlgorithm; its sends and receives as one all-to-all-v
// round carrying the largest message (an upper bound for sparse patterns).
ncclResult_t estimate(const Bucket& b, double* us) {
  CommGuard guard(b.comm, "ncclGroupSimulateEnd");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  size_t largestMessage = 0;
  bool anyP2p = false;
  for (const Call& c : b.calls) {
    if (c.kind == Kind::kSend || c.kind == Kind::kRecv) {
      anyP2p = true;
      largestMessage = std::max(largestMessage, c.count * elementSize(c.datatype));
      continue;
    }
    double t = 0;
    r = fromBraid(b.comm, braidCommGetAlgorithm(inner, collectiveOf(c.kind), c.count, c.datatype,
                                                nullptr, &t));
    if (r != ncclSuccess) return r;
    *us += t;
  }
  if (anyP2p) {
    double t = 0;
    r = fromBraid(b.comm, braidCommGetAlgorithm(inner, braidCollAlltoAllv, largestMessage,
                                                braidUint8, nullptr, &t));
    if (r != ncclSuccess) return r;
    *us += t;
  }
  return ncclSuccess;
}

// The premul-sum ops destroyed inside the group that ends now (an op whose
// communicator is gone went with it: the guard, given no function, records no error).
void destroyDeferredOps() {
  std::vector<DeferredOp> deferred;
  deferred.swap(tDeferredOps);
  for (const DeferredOp& d : deferred) {
    CommGuard guard(d.comm, nullptr);
    if (!guard.ok()) continue;
    ncclResult_t r;
    if (braidComm_t inner = guard.ready(&r, true)) (void)braidRedOpDestroy(d.op, inner);
  }
}

constexpr unsigned int kSimInfoMagic = 0x74685283;

}  // namespace

bool inGroup() { return tDepth > 0; }

bool queueInGroup(const Call& call) {
  if (tDepth == 0) return false;
  tCalls.push_back(call);
  return true;
}

void addGroupInit(ncclComm* comm, std::shared_ptr<Job> job, bool blocking) {
  tInits.push_back({comm, std::move(job), blocking});
}

void deferOpDestroy(ncclComm* comm, braidRedOp_t op) { tDeferredOps.push_back({comm, op}); }

}  // namespace braid::nccl

using namespace braid::nccl;

extern "C" {

ncclResult_t ncclGroupStart() {
  ++tDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (tDepth == 0) return fail(nullptr, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--tDepth > 0) return ncclSuccess;
  std::vector<Call> calls;
  calls.swap(tCalls);
  std::vector<GroupInit> inits;
  inits.swap(tInits);
  ncclResult_t created = finishInits(inits);
  ncclResult_t ran = runBuckets(byComm(std::move(calls)));
  destroyDeferredOps();
  return ran != ncclSuccess ? ran : created;
}

// Ends the group as ncclGroupEnd does, except that its calls are priced, not
// run (communicators created inside it are still made).
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (simInfo == nullptr) {
    return fail(nullptr, ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  }
  if (simInfo->magic != kSimInfoMagic ||
      simInfo->size < offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float)) {
    return fail(nullptr, ncclInvalidArgument,
                "ncclGroupSimulateEnd: simInfo was not initialised with NCCL_SIM_INFO_INITIALIZER "
                "(size or magic is wrong)");
  }
  if (tDepth == 0) {
    return fail(nullptr, ncclInvalidUsage, "ncclGroupSimulateEnd without ncclGroupStart");
  }
  double us = 0;
  ncclResult_t priced = ncclSuccess;
  for (const Bucket& b : byComm(tCalls)) {
    priced = estimate(b, &us);
    if (priced != ncclSuccess) break;
  }
  if (priced == ncclSuccess) simInfo->estimatedTime = static_cast<float>(us);
  if (--tDepth > 0) return priced;
  tCalls.clear();
  destroyDeferredOps();
  std::vector<GroupInit> inits;
  inits.swap(tInits);
  ncclResult_t created = finishInits(inits);
  return priced != ncclSuccess ? priced : created;
}

}  // extern "C"

BRAID_NCCL_ALIAS(ncclGroupStart)
BRAID_NCCL_ALIAS(ncclGroupEnd)
BRAID_NCCL_ALIAS(ncclGroupSimulateEnd)
