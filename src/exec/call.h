// One call (a collective, a send or a receive) as the executors see it: its buffers, counts,
// datatype and operation, and what follows from them alone (in place or not, the bytes a
// group's sends and receives cover, a point-to-point step, the schedule's arguments).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "braid/braid.h"
#include "core/status.h"

namespace braid {

// A premul-sum's scaling (braidRedOpCreatePreMulSum), resolved when the call is made: the
// collective runs as braidSum over each rank's input times its scalar, `value` or what
// scalarPtr points at when the call runs (runtime/premul.h).
struct PreMulScale {
  bool on = false;
  unsigned char value[8] = {};
  const void* scalarPtr = nullptr;
};

struct Call {
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
  PreMulScale preMul;                                                    // with op braidSum
  uint64_t issuedNs = 0;  // when the program made the call, under BRAID_TRACE (else 0)
};

// A group's sends and receives (collectives ignored): invalid usage when a receive buffer
// overlaps another of its send or receive buffers (they run at the same time), unless it is
// one of its send buffers exactly (the same address and bytes: NCCL's in-place send/receive,
// which pointToPointPlan below orders).
Status checkGroupBuffers(const std::vector<const Call*>& ops);

// A group's sends to this rank and receives from it (`group`: its sends and receives),
// paired in order; invalid usage when they do not pair (count or size) or a receive
// buffer overlaps another of the group's buffers (checkGroupBuffers).
struct SelfPairs {
  std::vector<const Call*> sends, recvs;
};
Expected<SelfPairs> pairSelfSends(const std::vector<const Call*>& group, int rank);

// How a group's sends and receives run so that every send reads its buffer as it was when
// the group began, whatever lands there: a receive into one of the group's send buffers
// (receiveLandsOnASend) goes to scratch, and is copied to its place once the sends have
// read theirs. Sends to this rank are copies: `before` the batch (from the send buffer
// into the receive buffer, or into scratch), a pair whose two buffers are one is nothing.
// `remote` is the batch: the sends and receives to other ranks (pointers to the group's
// calls, valid while the group is), each receive's buffer where it lands (scratch or its
// own). A pointer into scratch is an offset from address 0 until placeScratch() adds the
// scratch buffer's address.
struct PointToPointPlan {
  struct Copy {
    const void* src;
    void* dst;
    size_t bytes;
    bool srcInScratch, dstInScratch;
  };
  struct Remote {
    const Call* call;
    void* recv;         // a receive's landing: call->recv, or a place in scratch
    bool recvInScratch;
  };
  // What of each call of the group the plan follows from, in the group's order: a group
  // whose calls match these (sameGroup) has this plan.
  struct Made {
    Call::Kind kind;
    int peer;
    const void* buffer;  // send's or receive's
    size_t count;
    braidDataType_t datatype;
    bool operator==(const Made& o) const {
      return kind == o.kind && peer == o.peer && buffer == o.buffer && count == o.count &&
             datatype == o.datatype;
    }
  };
  std::vector<Copy> before, after;
  std::vector<Remote> remote;
  size_t scratchBytes = 0;
  std::vector<Made> madeFor;  // empty until a plan is made
};
Expected<PointToPointPlan> pointToPointPlan(const std::vector<const Call*>& group, int rank);
// The same into *plan, whose vectors keep their capacity (a caller's reused plan).
Status pointToPointPlan(const std::vector<const Call*>& group, int rank, PointToPointPlan* plan);
void placeScratch(PointToPointPlan* plan, void* scratch);
// Whether `plan` was made for a group of these calls: the same sends and receives, in the
// same order, of the same buffers, counts, datatypes and peers (so the same checks pass).
bool sameGroup(const PointToPointPlan& plan, const std::vector<const Call*>& group);

// Whether `recv` (a receive of `group`) lands on one of the group's send buffers.
bool receiveLandsOnASend(const Call& recv, const std::vector<const Call*>& group);

// A send or receive (to another rank) as a step of the group's batch: its bytes addressed
// absolutely (base 0, one-byte elements), batchWithNext set; a plan's receive lands where
// the plan put it.
algo::Step pointToPointStep(const Call& op);
algo::Step pointToPointStep(const PointToPointPlan::Remote& op);

// The schedule arguments of collective `op` on `rank` of `nranks` (count, element size,
// placement, root, all-to-all-v's counts); maxStepElems and nodeOf are the caller's.
algo::CollArgs collArgsOf(const Call& op, int rank, int nranks);

// Whether a collective's buffers lie in place as NCCL defines it, on `rank` (es: bytes per
// element); all-to-all-v never is.
bool isInPlace(const Call& op, int rank, size_t es);

}  // namespace braid
