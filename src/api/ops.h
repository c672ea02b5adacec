// One requested operation (a collective, a send or a receive), and running a
// list of them: alone, or as a group. Used by the C entry points.
#pragma once

#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "api/handle.h"

namespace braid {

// A premul-sum's scaling (braidRedOpCreatePreMulSum), resolved when the call is made: the
// collective runs as braidSum over each rank's input times its scalar, `value` or what
// scalarPtr points at when the call runs (api/premul.h).
struct PreMulScale {
  bool on = false;
  unsigned char value[8] = {};
  const void* scalarPtr = nullptr;
};

struct OpRequest {
  enum class Kind { kCollective, kSend, kRecv };
  Kind kind = Kind::kCollective;
  algo::Collective collective = algo::Collective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  braidDataType_t datatype = braidFloat32;
  braidRedOp_t op = braidSum;
  int root = 0;                                                          // collectives with a root
  int peer = -1;                                                         // send / recv
  std::vector<uint64_t> sendCounts, sendDispls, recvCounts, recvDispls;  // all-to-all-v
  PreMulScale preMul;  // with op braidSum
};

// comm's schedule for (args, alg): built at its first use (and then written by
// BRAID_SCHEDULE_DUMP, api/schedule_dump.h, naming `executor`) and kept among the
// communicator's recent ones; all-to-all-v's, whose counts change by call, built (and
// written) at every call. Valid until the next call. The caller holds comm->opMu.
const algo::Schedule& scheduleFor(braidComm* comm, const algo::CollArgs& args, algo::Algorithm alg,
                                  const char* executor = "host");

// A group's sends and receives (collectives ignored): invalid usage when a receive buffer
// overlaps another of its send or receive buffers (they run at the same time).
Status checkGroupBuffers(const std::vector<const OpRequest*>& ops);

// A group's sends to this rank and receives from it (`group`: its sends and receives),
// paired in order; invalid usage when they do not pair (count or size) or a receive
// buffer overlaps another of the group's buffers (checkGroupBuffers).
struct SelfPairs {
  std::vector<const OpRequest*> sends, recvs;
};
Expected<SelfPairs> pairSelfSends(const std::vector<const OpRequest*>& group, int rank);

// A send or receive (to another rank) as a step of the group's batch: its bytes addressed
// absolutely (base 0, one-byte elements), batchWithNext set.
algo::Step pointToPointStep(const OpRequest& op);

// The schedule arguments of collective `op` on `rank` of `nranks` (count, element size,
// placement, root, all-to-all-v's counts); maxStepElems and nodeOf are the caller's.
algo::CollArgs collArgsOf(const OpRequest& op, int rank, int nranks);

// Whether a collective's buffers lie in place as NCCL defines it, on `rank` (es: bytes per
// element); all-to-all-v never is.
bool isInPlace(const OpRequest& op, int rank, size_t es);

// Runs `ops` on comm: collectives one after another in order, then every
// send and receive together as one batch (so any pattern completes). Holds
// comm->opMu throughout.
Status runOps(braidComm* comm, const std::vector<OpRequest>& ops);
Status runOps(braidComm* comm, const OpRequest* ops, size_t n);
// runOps for a caller that already holds comm->opMu.
Status runOpsLocked(braidComm* comm, const OpRequest* ops, size_t n);

// Issues `ops` now (NULL stream) or on `stream`, reporting asynchronous
// failures through the communicator.
braidResult_t issueOps(braidComm* comm, std::vector<OpRequest> ops, braidStream_t stream);
// The same for one op (no allocation on the NULL stream's host path).
braidResult_t issueOne(braidComm* comm, OpRequest&& op, braidStream_t stream);

// Inside braidGroupStart/End on this thread: queues the op and returns true.
bool queueInGroup(braidComm* comm, OpRequest&& op, braidStream_t stream);

}  // namespace braid
