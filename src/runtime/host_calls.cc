#include "runtime/host_calls.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "core/logging.h"
#include "exec/copy.h"
#include "exec/reduce.h"
#include "runtime/call_executor.h"
#include "runtime/dispatch.h"
#include "runtime/nvtx.h"
#include "runtime/premul.h"
#include "runtime/schedule_cache.h"
#include "runtime/tracing.h"

namespace braid {
namespace {

using algo::Collective;

// op's schedule arguments on this communicator: the call's own (collArgsOf), the step
// size its FIFOs allow and, across nodes, every rank's node.
algo::CollArgs argsFor(const Comm& c, const Call& op) {
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

CallSignature signatureOf(const Call& op, uint64_t seq) {
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
Status checkCallsMatch(braidComm* comm, const Call& op, uint64_t seq) {
  Comm& c = *comm->comm;
  const CallSignature mine = signatureOf(op, seq);
  std::vector<CallSignature> all(c.nranks());
  BRAID_TRY(agreeOnRing(comm, &mine, all.data(), sizeof(CallSignature), "call check"));
  for (int r = 0; r < c.nranks(); ++r) {
    if (std::memcmp(&all[r], &all[0], sizeof(CallSignature)) == 0) continue;
    return invalidUsage("BRAID_CHECK: the ranks' calls differ: rank 0 called " +
                        describeCall(all[0]) + ", rank " + std::to_string(r) + " called " +
                        describeCall(all[r]));
  }
  return Status::ok();
}

}  // namespace

Status agreeOnRing(braidComm* comm, const void* mine, void* all, size_t bytes, const char* what) {
  Comm& c = *comm->comm;
  Call gather;
  gather.collective = Collective::kAllGather;
  gather.count = bytes;
  gather.datatype = braidUint8;
  gather.send = mine;
  gather.recv = all;
  const algo::CollArgs args = argsFor(c, gather);
  const algo::Schedule& s = scheduleFor(comm, args, algo::Algorithm::kRing);
  OpDesc desc;
  desc.collective = what;
  desc.algorithm = "ring";
  desc.seq = c.postedSeq() + 1;  // the next call's: every rank runs this before it
  desc.bytes = bytes;
  desc.datatype = braidUint8;
  return comm->exec->run(s, ExecBuffers{mine, all}, desc);
}

namespace {

// A premul-sum's scaling: the windows take the scalar (read now) into *b and scale as they
// copy the input in; otherwise the input is scaled into a copy now and *args no longer
// counts the call as in place.
Status placeScale(braidComm* comm, const Call& op, algo::Algorithm alg, Windows windows,
                  const OpDesc& desc, algo::CollArgs* args, ExecBuffers* b, unsigned char* scalar) {
  bool fused = false;
  if (windows == Windows::kRunIt) {
    BRAID_ASSIGN_OR_RETURN(fused, comm->windows->takesScale(*args, alg, desc));
  }
  if (fused) {
    readHostScalar(op.preMul, datatypeSize(op.datatype), scalar);
    b->scale = scalar;
    return Status::ok();
  }
  const std::vector<Call> scaled =
      scaleOnHost(&op, 1, comm->comm->rank(), comm->comm->nranks(), &comm->preMulCopies);
  b->input = scaled.front().send;
  *args = argsFor(*comm->comm, scaled.front());
  return Status::ok();
}

// A loaded algorithm's schedule (runtime/user_algorithms.h) on the host FIFOs, or its
// window program on the shared windows.
Status runUserAlgorithm(braidComm* comm, const Call& op, const algo::AlgoFile& file,
                        algo::CollArgs args, const OpDesc& desc) {
  ExecBuffers b{op.send, op.recv};
  unsigned char scalar[8];
  if (op.preMul.on) {
    BRAID_TRY(
        placeScale(comm, op, algo::Algorithm::kRing, Windows::kDoNot, desc, &args, &b, scalar));
  }
  const algo::FileProgram* program = file.programFor(args.nranks);
  if (program != nullptr && program->windowed) {
    // The selector offers a window program only where the windows run (select.h); they
    // may still have failed to set up, which run() reports. Its areas are the windows'.
    algo::CollArgs wargs = args;
    wargs.windowElems = comm->windows->chunkBytes() / args.elemSize;
    BRAID_ASSIGN_OR_RETURN(const algo::Schedule* s, userScheduleFor(comm, wargs, file));
    return comm->windows->run(
        args, algo::Algorithm::kRing, b, desc,
        [s](const algo::CollArgs&, algo::Algorithm) -> const algo::Schedule& { return *s; }, &file);
  }
  BRAID_ASSIGN_OR_RETURN(const algo::Schedule* s, userScheduleFor(comm, args, file));
  CallContext ctx;
  ctx.comm = comm;
  ctx.args = &args;
  ctx.buffers = b;
  ctx.desc = &desc;
  ctx.schedule = s;
  return executorFor(comm, Executor::kHostFifo).run(&op, 1, ctx);
}

// Works out how `op` runs into *r and says so in the log. r is kept for calls of the same
// shape where no algorithm is loaded (whether one serves a call depends on more than its
// shape), no premul-sum is scaled and no per-call log line is written.
Status resolve(braidComm* comm, const Call& op, ResolvedCall* r) {
  Comm& c = *comm->comm;
  r->kept = false;
  const size_t es = datatypeSize(op.datatype);
  r->args = argsFor(c, op);
  // What a loaded algorithm must serve; nothing to work out where none is loaded.
  CallFit fit;
  const bool loaded = !comm->selector.userAlgorithms().empty();
  if (loaded) fit = callFitOf(op, r->args);
  const CallFit* fits = loaded ? &fit : nullptr;
  BRAID_ASSIGN_OR_RETURN(r->choice,
                         comm->selector.chooseForCall(op.collective, op.count * es, fits));
  const algo::Algorithm alg = r->choice.algorithm;
  OpDesc& desc = r->desc;
  desc.collective = algo::collectiveName(op.collective);
  desc.algorithm = r->choice.name();
  desc.seq = c.postedSeq() + 1;  // this call's, for the log line; each call sets its own
  desc.bytes = op.count * es;
  desc.datatype = op.datatype;
  desc.op = op.op;
  // INFO says which algorithm a collective runs, and why, each time that changes.
  uint8_t& logged = comm->loggedAlgorithm[static_cast<size_t>(op.collective)];
  const uint8_t shown =
      r->choice.user != nullptr
          ? static_cast<uint8_t>(100 + std::hash<std::string>()(r->choice.user->name) % 100)
          : static_cast<uint8_t>(alg) + 1;
  if (logLevel() >= LogLevel::kInfo && logged != shown) {
    logged = shown;
    BRAID_INFO("%s: %s, predicted %.1f us (%s; ranking: %s)", desc.describe().c_str(),
               desc.algorithm, r->choice.predictedUs,
               r->choice.forced ? "BRAID_ALGO" : "cost model",
               comm->selector.explain(op.collective, desc.bytes, fits).c_str());
  } else {
    BRAID_TRACE("%s: algorithm %s, predicted %.1f us", desc.describe().c_str(), desc.algorithm,
                r->choice.predictedUs);
  }
  r->windows = comm->windows->handles(op.collective, alg) ? Windows::kRunIt : Windows::kDoNot;
  const Placement placement = c.nranks() == 1 ? Placement::kOneRank : Placement::kRanks;
  r->executor = dispatch({Memory::kHost, placement, r->windows, Capture::kNone});
  r->kept = !loaded && !op.preMul.on && op.collective != Collective::kAllToAllv &&
            logLevel() < LogLevel::kTrace;
  return Status::ok();
}

// Runs collective `op` as r says, with `args` and buffers `b` (a premul-sum's scaled ones).
Status runResolved(braidComm* comm, const Call& op, const ResolvedCall& r,
                   const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc) {
  Comm& c = *comm->comm;
  CallContext ctx;
  ctx.comm = comm;
  ctx.args = &args;
  ctx.algorithm = r.choice.algorithm;
  ctx.buffers = b;
  ctx.desc = &desc;
  CallExecutor& executor = executorFor(comm, r.executor);
  std::optional<NvtxRange> range;
  if (nvtxHostRanges()) range.emplace(op);
  if (c.trace() != nullptr) {
    traceCallStarts(comm, &op, desc, executor.name());
    Status st = executor.run(&op, 1, ctx);
    traceCallEnds(comm, st);
    BRAID_TRY(st);
  } else {
    BRAID_TRY(executor.run(&op, 1, ctx));
  }
  c.opCompleted(desc.seq);
  return Status::ok();
}

// A premul-sum: its input scaled first (placeScale), or its scalar handed to the windows.
Status runScaled(braidComm* comm, const Call& op, const ResolvedCall& r, const OpDesc& desc) {
  algo::CollArgs args = r.args;
  ExecBuffers b{op.send, op.recv};
  unsigned char scalar[8];
  BRAID_TRY(placeScale(comm, op, r.choice.algorithm, r.windows, desc, &args, &b, scalar));
  return runResolved(comm, op, r, args, b, desc);
}

Status runCollective(braidComm* comm, const Call& op) {
  Comm& c = *comm->comm;
  if (comm->checkCalls && c.nranks() > 1) BRAID_TRY(checkCallsMatch(comm, op, c.postedSeq() + 1));
  // A kept resolution was made with no algorithm loaded; one registered since
  // (braidCommRegisterAlgorithm) may serve this call.
  ResolvedCall& r = comm->lastCall;
  if (!r.matches(op, c.rank()) || !comm->selector.userAlgorithms().empty()) {
    BRAID_TRY(resolve(comm, op, &r));
  }
  OpDesc desc = r.desc;
  desc.seq = c.postedSeq() + 1;
  c.nextSeq(desc.label());
  if (r.choice.user != nullptr && c.nranks() > 1) {
    BRAID_TRY(runUserAlgorithm(comm, op, *r.choice.user, r.args, desc));
    c.opCompleted(desc.seq);
    return Status::ok();
  }
  if (op.preMul.on) return runScaled(comm, op, r, desc);
  return runResolved(comm, op, r, r.args, ExecBuffers{op.send, op.recv}, desc);
}

// A group's sends and receives to other ranks, schedule `s`, on the FIFO executor;
// `first` is the group's first call, which names the batch on a trace.
Status runBatch(braidComm* comm, const algo::Schedule& s, const Call* first) {
  Comm& c = *comm->comm;
  OpDesc desc;
  desc.collective = "sendrecv";
  desc.algorithm = "p2p";
  desc.pointToPoint = true;
  desc.seq = c.postedSeq() + 1;
  for (const algo::Step& st : s.steps) desc.bytes += st.count;
  desc.datatype = braidUint8;
  c.nextSeq(desc.label());
  CallContext ctx;
  ctx.comm = comm;
  ctx.buffers = ExecBuffers{nullptr, nullptr};
  ctx.desc = &desc;
  ctx.schedule = &s;
  CallExecutor& executor = executorFor(comm, Executor::kHostFifo);
  if (c.trace() != nullptr) traceCallStarts(comm, first, desc, executor.name());
  Status st = executor.run(nullptr, 0, ctx);  // all in ctx.schedule
  if (c.trace() != nullptr) traceCallEnds(comm, st);
  BRAID_TRY(st);
  c.opCompleted(desc.seq);
  return Status::ok();
}

// Every send and receive of a group as one batch. Buffers are addressed
// absolutely (base 0, one-byte elements), so one schedule covers them all; receives
// that land on a send buffer go through comm->p2pScratch (exec/call.h). The plan and
// schedule of the last group are kept for the next group of the same calls.
Status runPointToPoint(braidComm* comm, const std::vector<const Call*>& ops) {
  Comm& c = *comm->comm;
  PointToPointPlan& plan = comm->p2pPlan;
  algo::Schedule& s = comm->p2pSchedule;
  if (!sameGroup(plan, ops)) {
    BRAID_TRY(pointToPointPlan(ops, c.rank(), &plan));
    if (plan.scratchBytes != 0) {
      if (comm->p2pScratch.size() < plan.scratchBytes) comm->p2pScratch.resize(plan.scratchBytes);
      placeScratch(&plan, comm->p2pScratch.data());
    }
    s.rank = c.rank();
    s.nranks = c.nranks();
    s.steps.clear();
    for (const PointToPointPlan::Remote& op : plan.remote) s.steps.push_back(pointToPointStep(op));
    if (!s.steps.empty()) s.steps.back().batchWithNext = false;
  }
  for (const PointToPointPlan::Copy& copy : plan.before) {
    std::memmove(copy.dst, copy.src, copy.bytes);
  }
  if (!s.steps.empty()) BRAID_TRY(runBatch(comm, s, ops.front()));
  for (const PointToPointPlan::Copy& copy : plan.after) {
    copyBytes(copy.dst, copy.src, copy.bytes);
  }
  return Status::ok();
}

}  // namespace

Status runOps(braidComm* comm, const Call* ops, size_t n) {
  std::lock_guard<std::mutex> lock(comm->opMu);
  return runOpsLocked(comm, ops, n);
}

// A premul-sum is scaled as each collective runs (placeScale), its scalar read then.
Status runOpsLocked(braidComm* comm, const Call* ops, size_t n) {
  bool sends = false;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].kind == Call::Kind::kCollective) {
      BRAID_TRY(runCollective(comm, ops[i]));
    } else {
      sends = true;
    }
  }
  if (!sends) return Status::ok();
  std::vector<const Call*>& p2p = comm->p2pCalls;
  p2p.clear();
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].kind != Call::Kind::kCollective) p2p.push_back(&ops[i]);
  }
  return p2p.empty() ? Status::ok() : runPointToPoint(comm, p2p);
}

Status runOps(braidComm* comm, const std::vector<Call>& ops) {
  return runOps(comm, ops.data(), ops.size());
}

CallFit callFitOf(const Call& op, const algo::CollArgs& args) {
  const bool reduces = op.collective == Collective::kAllReduce ||
                       op.collective == Collective::kReduceScatter ||
                       op.collective == Collective::kReduce;
  CallFit fit;
  // A premul-sum's loaded schedule runs on its input scaled into a copy: out of place.
  fit.inPlace = args.inPlace && !op.preMul.on;
  fit.dtype = datatypeName(op.datatype);
  if (reduces) fit.op = op.preMul.on ? "sum" : redOpName(op.op);  // premul: scaled, then summed
  fit.root = op.root;
  return fit;
}

}  // namespace braid
