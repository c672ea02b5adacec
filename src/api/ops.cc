#include "api/ops.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "api/cuda_ops.h"
#include "api/premul.h"
#include "api/schedule_dump.h"
#include "api/thread_peers.h"
#include "core/logging.h"
#include "core/stream.h"
#include "core/stream_lanes.h"
#include "cuda/device.h"
#include "exec/reduce.h"

namespace braid {
namespace {

using algo::Collective;

constexpr size_t kMaxCachedSchedules = 32;

struct Queued {
  braidComm* comm;
  OpRequest op;
  braidStream_t stream;
};
thread_local int tGroupDepth = 0;
thread_local std::vector<Queued> tGroup;

// op's schedule arguments on this communicator: the call's own (collArgsOf), the step
// size its FIFOs allow and, across nodes, every rank's node.
algo::CollArgs argsFor(const Comm& c, const OpRequest& op) {
  algo::CollArgs args = collArgsOf(op, c.rank(), c.nranks());
  // Half the FIFO per step: the first send of a round always fits, and a rank
  // can run a step ahead of its neighbour.
  args.maxStepElems =
      std::max<uint64_t>(1, c.config().sliceBytes * (c.config().slots / 2) / args.elemSize);
  if (c.nodes() > 1) args.nodeOf = c.nodeOf();
  return args;
}

// BRAID_CHECK=1: what every rank must agree on for one collective call.
struct CallSignature {
  uint32_t magic;
  uint32_t collective;
  uint64_t seq;
  uint64_t count;  // 0 for all-to-all-v (its counts differ by rank)
  int32_t datatype;
  int32_t op;    // -1 when the collective does not reduce
  int32_t root;  // -1 when it has no root
  uint32_t pad;
};
constexpr uint32_t kSignatureMagic = 0x42524348;  // "BRCH"

CallSignature signatureOf(const OpRequest& op, uint64_t seq) {
  const bool reduces = op.collective == Collective::kAllReduce ||
                       op.collective == Collective::kReduceScatter ||
                       op.collective == Collective::kReduce;
  const bool rooted = op.collective == Collective::kBroadcast ||
                      op.collective == Collective::kReduce ||
                      op.collective == Collective::kGather || op.collective == Collective::kScatter;
  CallSignature sig{};
  sig.magic = kSignatureMagic;
  sig.collective = static_cast<uint32_t>(op.collective);
  sig.seq = seq;
  sig.count = op.collective == Collective::kAllToAllv ? 0 : op.count;
  sig.datatype = op.datatype;
  sig.op = reduces ? op.op : -1;
  sig.root = rooted ? op.root : -1;
  return sig;
}

std::string describeCall(const CallSignature& s) {
  if (s.collective > static_cast<uint32_t>(Collective::kAllToAllv)) {
    return "an unknown collective (" + std::to_string(s.collective) + ")";
  }
  std::string out = algo::collectiveName(static_cast<Collective>(s.collective));
  out += " #" + std::to_string(s.seq) + " (count " + std::to_string(s.count) + ", " +
         datatypeName(static_cast<braidDataType_t>(s.datatype));
  if (s.op >= 0) out += std::string(", ") + redOpName(static_cast<braidRedOp_t>(s.op));
  if (s.root >= 0) out += ", root " + std::to_string(s.root);
  return out + ")";
}

// All-gathers every rank's signature of this call (a fixed-size ring
// all-gather, so it matches across ranks whatever they called) and fails on
// every rank alike when any differs, naming both calls.
Status checkCallsMatch(braidComm* comm, const OpRequest& op, uint64_t seq) {
  Comm& c = *comm->comm;
  const CallSignature mine = signatureOf(op, seq);
  std::vector<CallSignature> all(c.nranks());
  OpRequest gather;
  gather.collective = Collective::kAllGather;
  gather.count = sizeof(CallSignature);
  gather.datatype = braidUint8;
  gather.send = &mine;
  gather.recv = all.data();
  const algo::CollArgs args = argsFor(c, gather);
  const algo::Schedule& s = scheduleFor(comm, args, algo::Algorithm::kRing);
  OpDesc desc;
  desc.collective = "call check";
  desc.algorithm = "ring";
  desc.seq = seq;
  desc.bytes = sizeof(CallSignature);
  desc.datatype = braidUint8;
  BRAID_TRY(comm->exec->run(s, ExecBuffers{gather.send, gather.recv}, desc));
  for (int r = 0; r < c.nranks(); ++r) {
    if (std::memcmp(&all[r], &all[0], sizeof(CallSignature)) == 0) continue;
    return invalidUsage("BRAID_CHECK: the ranks' calls differ: rank 0 called " +
                        describeCall(all[0]) + ", rank " + std::to_string(r) + " called " +
                        describeCall(all[r]));
  }
  return Status::ok();
}

// A premul-sum's scaling: the windows take the scalar (read now) into *b and scale as they
// copy the input in; otherwise the input is scaled into a copy now and *args no longer
// counts the call as in place.
Status placeScale(braidComm* comm, const OpRequest& op, algo::Algorithm alg, const OpDesc& desc,
                  algo::CollArgs* args, ExecBuffers* b, unsigned char* scalar) {
  bool fused = false;
  if (comm->windows->handles(op.collective, alg)) {
    BRAID_ASSIGN_OR_RETURN(fused, comm->windows->takesScale(*args, alg, desc));
  }
  if (fused) {
    readHostScalar(op.preMul, datatypeSize(op.datatype), scalar);
    b->scale = scalar;
    return Status::ok();
  }
  const std::vector<OpRequest> scaled =
      scaleOnHost(&op, 1, comm->comm->rank(), comm->comm->nranks(), &comm->preMulCopies);
  b->input = scaled.front().send;
  *args = argsFor(*comm->comm, scaled.front());
  return Status::ok();
}

Status runCollective(braidComm* comm, const OpRequest& op) {
  Comm& c = *comm->comm;
  if (comm->checkCalls && c.nranks() > 1) BRAID_TRY(checkCallsMatch(comm, op, c.postedSeq() + 1));
  const size_t es = datatypeSize(op.datatype);
  algo::CollArgs args = argsFor(c, op);
  BRAID_ASSIGN_OR_RETURN(Selector::Choice choice,
                         comm->selector.chooseForCall(op.collective, op.count * es));
  const algo::Algorithm alg = choice.algorithm;
  OpDesc desc;
  desc.collective = algo::collectiveName(op.collective);
  desc.algorithm = algo::algorithmName(alg);
  desc.seq = c.postedSeq() + 1;
  desc.bytes = op.count * es;
  desc.datatype = op.datatype;
  desc.op = op.op;
  c.nextSeq(desc.label());
  // INFO says which algorithm a collective runs, and why, each time that changes.
  uint8_t& logged = comm->loggedAlgorithm[static_cast<size_t>(op.collective)];
  if (logLevel() >= LogLevel::kInfo && logged != static_cast<uint8_t>(alg) + 1) {
    logged = static_cast<uint8_t>(alg) + 1;
    BRAID_INFO("%s: %s, predicted %.1f us (%s; ranking: %s)", desc.describe().c_str(),
               desc.algorithm, choice.predictedUs, choice.forced ? "BRAID_ALGO" : "cost model",
               comm->selector.explain(op.collective, desc.bytes).c_str());
  } else {
    BRAID_TRACE("%s: algorithm %s, predicted %.1f us", desc.describe().c_str(), desc.algorithm,
                choice.predictedUs);
  }
  ExecBuffers b{op.send, op.recv};
  unsigned char scalar[8];
  if (op.preMul.on) BRAID_TRY(placeScale(comm, op, alg, desc, &args, &b, scalar));
  if (comm->windows->handles(op.collective, alg)) {
    BRAID_TRY(comm->windows->run(args, alg, b, desc, [&]() -> const algo::Schedule& {
      return scheduleFor(comm, args, alg);
    }));
  } else {
    const algo::Schedule& s = scheduleFor(comm, args, alg);
    BRAID_TRY(comm->exec->run(s, b, desc));
  }
  c.opCompleted(desc.seq);
  return Status::ok();
}

// Every send and receive of a group as one batch. Buffers are addressed
// absolutely (base 0, one-byte elements), so one schedule covers them all.
Status runPointToPoint(braidComm* comm, const std::vector<const OpRequest*>& ops) {
  Comm& c = *comm->comm;
  algo::Schedule s;
  s.rank = c.rank();
  s.nranks = c.nranks();
  BRAID_ASSIGN_OR_RETURN(SelfPairs self, pairSelfSends(ops, c.rank()));
  for (size_t i = 0; i < self.sends.size(); ++i) {
    const size_t bytes = self.sends[i]->count * datatypeSize(self.sends[i]->datatype);
    if (bytes > 0) std::memmove(self.recvs[i]->recv, self.sends[i]->send, bytes);
  }
  for (const OpRequest* op : ops) {
    if (op->peer != c.rank()) s.steps.push_back(pointToPointStep(*op));
  }
  if (s.steps.empty()) return Status::ok();
  s.steps.back().batchWithNext = false;
  OpDesc desc;
  desc.collective = "sendrecv";
  desc.algorithm = "p2p";
  desc.seq = c.postedSeq() + 1;
  for (const algo::Step& st : s.steps) desc.bytes += st.count;
  desc.datatype = braidUint8;
  c.nextSeq(desc.label());
  BRAID_TRY(comm->exec->run(s, ExecBuffers{nullptr, nullptr}, desc));
  c.opCompleted(desc.seq);
  return Status::ok();
}

// issueOps once the call is counted.
braidResult_t issueCounted(braidComm* comm, std::vector<OpRequest> ops, braidStream_t stream) {
  if (usesCuda(ops, stream)) return issueCudaOps(comm, std::move(ops), stream);
  if (Status st = checkHostScalars(ops); !st.isOk()) return finish(comm, st);
  ThreadPeers::hostCallIssued(comm, ops);  // its part, for peers' staged calls
  waitForStagedCalls(comm);  // host collectives in issue order on every rank
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

const algo::Schedule& scheduleFor(braidComm* comm, const algo::CollArgs& args, algo::Algorithm alg,
                                  const char* executor) {
  if (args.collective == algo::Collective::kAllToAllv) {
    comm->allToAllv = algo::buildSchedule(alg, args);
    dumpSchedule(comm->allToAllv, args, alg, executor);
    return comm->allToAllv;
  }
  auto& cache = comm->schedules;
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->collective == args.collective && it->algorithm == alg && it->count == args.count &&
        it->elemSize == args.elemSize && it->inPlace == args.inPlace && it->root == args.root &&
        it->maxStepElems == args.maxStepElems) {
      cache.splice(cache.begin(), cache, it);
      return cache.front().schedule;
    }
  }
  cache.push_front({args.collective, alg, args.count, args.elemSize, args.inPlace, args.root,
                    args.maxStepElems, algo::buildSchedule(alg, args)});
  if (cache.size() > kMaxCachedSchedules) cache.pop_back();
  dumpSchedule(cache.front().schedule, args, alg, executor);
  return cache.front().schedule;
}

Status checkGroupBuffers(const std::vector<const OpRequest*>& ops) {
  // Sends and receives of a group run at the same time: a receive may not
  // land on memory a send still reads (or another receive writes).
  for (const OpRequest* a : ops) {
    if (a->kind != OpRequest::Kind::kRecv) continue;
    const auto lo = reinterpret_cast<uintptr_t>(a->recv);
    const auto hi = lo + a->count * datatypeSize(a->datatype);
    for (const OpRequest* b : ops) {
      if (b == a) continue;
      const void* p = b->kind == OpRequest::Kind::kSend ? b->send : b->recv;
      const auto blo = reinterpret_cast<uintptr_t>(p);
      const auto bhi = blo + b->count * datatypeSize(b->datatype);
      if (lo < bhi && blo < hi) {
        return invalidUsage("a group's receive buffer overlaps another of its " +
                            std::string(b->kind == OpRequest::Kind::kSend ? "send" : "receive") +
                            " buffers (peers " + std::to_string(a->peer) + " and " +
                            std::to_string(b->peer) + "); give each its own memory");
      }
    }
  }
  return Status::ok();
}

Expected<SelfPairs> pairSelfSends(const std::vector<const OpRequest*>& group, int rank) {
  SelfPairs self;
  for (const OpRequest* op : group) {
    if (op->peer == rank) {
      (op->kind == OpRequest::Kind::kSend ? self.sends : self.recvs).push_back(op);
    }
  }
  bool paired = self.sends.size() == self.recvs.size();
  for (size_t i = 0; paired && i < self.sends.size(); ++i) {
    paired = self.sends[i]->count * datatypeSize(self.sends[i]->datatype) ==
             self.recvs[i]->count * datatypeSize(self.recvs[i]->datatype);
  }
  if (!paired) {
    return invalidUsage(
        "a send to this rank needs a receive from it of the same size in the same group (and "
        "a receive from it a send)");
  }
  BRAID_TRY(checkGroupBuffers(group));
  return self;
}

algo::Step pointToPointStep(const OpRequest& op) {
  algo::Step st;
  st.count = op.count * datatypeSize(op.datatype);
  if (op.kind == OpRequest::Kind::kSend) {
    st.op = algo::OpKind::kSend;
    st.src = algo::BufRef::kInput;
    st.srcOffset = reinterpret_cast<uintptr_t>(op.send);
    st.sendPeer = op.peer;
  } else {
    st.op = algo::OpKind::kRecv;
    st.dst = algo::BufRef::kOutput;
    st.dstOffset = reinterpret_cast<uintptr_t>(op.recv);
    st.recvPeer = op.peer;
  }
  st.batchWithNext = true;
  return st;
}

algo::CollArgs collArgsOf(const OpRequest& op, int rank, int nranks) {
  const size_t es = datatypeSize(op.datatype);
  algo::CollArgs args;
  args.collective = op.collective;
  args.rank = rank;
  args.nranks = nranks;
  args.count = op.count;
  args.elemSize = static_cast<uint32_t>(es);
  args.inPlace = isInPlace(op, rank, es);
  args.root = op.root;
  args.sendCounts = op.sendCounts;
  args.sendDispls = op.sendDispls;
  args.recvCounts = op.recvCounts;
  args.recvDispls = op.recvDispls;
  return args;
}

bool isInPlace(const OpRequest& op, int rank, size_t es) {
  auto at = [](const void* p, size_t bytes) { return static_cast<const char*>(p) + bytes; };
  const size_t block = op.count * es;
  switch (op.collective) {
    case Collective::kAllGather:
      return op.send == at(op.recv, rank * block);
    case Collective::kReduceScatter:
      return op.recv == at(op.send, rank * block);
    case Collective::kGather:
      return rank == op.root && op.send == at(op.recv, rank * block);
    case Collective::kScatter:
      return rank == op.root && op.recv == at(op.send, rank * block);
    case Collective::kAllToAllv:
      return false;
    default:
      return op.send == op.recv;
  }
}

Status runOps(braidComm* comm, const OpRequest* ops, size_t n) {
  std::lock_guard<std::mutex> lock(comm->opMu);
  return runOpsLocked(comm, ops, n);
}

// A premul-sum is scaled as each collective runs (placeScale), its scalar read then.
Status runOpsLocked(braidComm* comm, const OpRequest* ops, size_t n) {
  std::vector<const OpRequest*> p2p;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].kind == OpRequest::Kind::kCollective) {
      BRAID_TRY(runCollective(comm, ops[i]));
    } else {
      p2p.push_back(&ops[i]);
    }
  }
  return p2p.empty() ? Status::ok() : runPointToPoint(comm, p2p);
}

Status runOps(braidComm* comm, const std::vector<OpRequest>& ops) {
  return runOps(comm, ops.data(), ops.size());
}

braidResult_t issueOne(braidComm* comm, OpRequest&& op, braidStream_t stream) {
  // The common case, a host call on the NULL stream, allocates nothing.
  if (stream == nullptr && !(cuda::compiled() && cuda::hasDevice())) {
    return finish(comm, runOps(comm, &op, 1));
  }
  std::vector<OpRequest> ops;
  ops.push_back(std::move(op));
  return issueOps(comm, std::move(ops), stream);
}

braidResult_t issueOps(braidComm* comm, std::vector<OpRequest> ops, braidStream_t stream) {
  // Counted, so that an abort from another thread cannot free comm under this call.
  if (!acquireComm(comm)) {
    return finish(nullptr,
                  invalidArgument("comm was destroyed or aborted while the call was being issued"));
  }
  braidResult_t r = issueCounted(comm, std::move(ops), stream);
  releaseComm(comm);
  return r;
}

bool queueInGroup(braidComm* comm, OpRequest&& op, braidStream_t stream) {
  if (tGroupDepth == 0) return false;
  tGroup.push_back({comm, std::move(op), stream});
  return true;
}

}  // namespace braid

using namespace braid;

extern "C" {

braidResult_t braidGroupStart(void) {
  ++tGroupDepth;
  return braidSuccess;
}

// One issue per communicator, in the order each was first used. Issues on one stream (a
// CUDA or a host stream) run one after another in that order, so the stream holds their
// work in the same order on every rank; issues on different streams, and each on the NULL
// stream, run side by side, a thread each beyond the first. Ranks of one process (a
// thread's communicators, as ncclCommInitAll makes them) then meet where a call waits for
// every rank: host buffers on the NULL stream, the device windows' set-up.
braidResult_t braidGroupEnd(void) {
  if (tGroupDepth == 0) {
    return finish(nullptr, invalidUsage("braidGroupEnd without a matching braidGroupStart"));
  }
  if (--tGroupDepth > 0) return braidSuccess;
  std::vector<Queued> group;
  group.swap(tGroup);
  struct Issue {
    braidComm* comm;
    braidStream_t stream;  // the communicator's first call's
    std::vector<OpRequest> ops;
  };
  std::vector<Issue> issues;
  for (Queued& q : group) {
    auto it = std::find_if(issues.begin(), issues.end(),
                           [&](const Issue& i) { return i.comm == q.comm; });
    if (it == issues.end()) it = issues.insert(issues.end(), Issue{q.comm, q.stream, {}});
    it->ops.push_back(std::move(q.op));
  }
  const std::vector<std::vector<size_t>> lanes =  // indices into issues, run in order
      laneByStream(issues.size(), [&](size_t i) { return issues[i].stream; });
  std::vector<braidResult_t> results(issues.size(), braidSuccess);
  std::vector<std::string> errors(issues.size());
  auto run = [&](const std::vector<size_t>& lane) {
    for (size_t i : lane) {
      Issue& is = issues[i];
      results[i] = isLiveComm(is.comm)
                       ? issueOps(is.comm, std::move(is.ops), is.stream)
                       : finish(nullptr, invalidArgument("a group used a destroyed comm"));
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

}  // extern "C"
