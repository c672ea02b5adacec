#include "exec/call.h"

#include <cstdint>
#include <string>

#include "exec/reduce.h"

namespace braid {

using algo::Collective;

Status checkGroupBuffers(const std::vector<const Call*>& ops) {
  // Sends and receives of a group run at the same time: a receive may not land on memory
  // a send still reads (or another receive writes), except on a send's buffer exactly,
  // which pointToPointPlan receives into scratch first.
  for (const Call* a : ops) {
    if (a->kind != Call::Kind::kRecv) continue;
    const auto lo = reinterpret_cast<uintptr_t>(a->recv);
    const auto hi = lo + a->count * datatypeSize(a->datatype);
    for (const Call* b : ops) {
      if (b == a) continue;
      const void* p = b->kind == Call::Kind::kSend ? b->send : b->recv;
      const auto blo = reinterpret_cast<uintptr_t>(p);
      const auto bhi = blo + b->count * datatypeSize(b->datatype);
      const bool sameAsASend = b->kind == Call::Kind::kSend && blo == lo && bhi == hi;
      if (lo < bhi && blo < hi && !sameAsASend) {
        return invalidUsage(
            "a group's receive buffer overlaps another of its " +
            std::string(b->kind == Call::Kind::kSend ? "send" : "receive") + " buffers (peers " +
            std::to_string(a->peer) + " and " + std::to_string(b->peer) +
            "); give each its own memory (a receive may use a send's buffer only whole: the "
            "same address and size)");
      }
    }
  }
  return Status::ok();
}

Expected<SelfPairs> pairSelfSends(const std::vector<const Call*>& group, int rank) {
  SelfPairs self;
  for (const Call* op : group) {
    if (op->peer == rank) {
      (op->kind == Call::Kind::kSend ? self.sends : self.recvs).push_back(op);
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

bool receiveLandsOnASend(const Call& recv, const std::vector<const Call*>& group) {
  const size_t bytes = recv.count * datatypeSize(recv.datatype);
  for (const Call* b : group) {
    if (bytes != 0 && b->kind == Call::Kind::kSend && b->send == recv.recv &&
        b->count * datatypeSize(b->datatype) == bytes) {
      return true;
    }
  }
  return false;
}

Expected<PointToPointPlan> pointToPointPlan(const std::vector<const Call*>& group, int rank) {
  PointToPointPlan plan;
  BRAID_TRY(pointToPointPlan(group, rank, &plan));
  return plan;
}

namespace {

PointToPointPlan::Made madeOf(const Call& op) {
  return {op.kind, op.peer, op.kind == Call::Kind::kSend ? op.send : op.recv, op.count,
          op.datatype};
}

}  // namespace

bool sameGroup(const PointToPointPlan& plan, const std::vector<const Call*>& group) {
  if (plan.madeFor.size() != group.size()) return false;
  for (size_t i = 0; i < group.size(); ++i) {
    if (!(plan.madeFor[i] == madeOf(*group[i]))) return false;
  }
  return true;
}

Status pointToPointPlan(const std::vector<const Call*>& group, int rank, PointToPointPlan* out) {
  PointToPointPlan& plan = *out;
  plan.madeFor.clear();
  BRAID_ASSIGN_OR_RETURN(SelfPairs self, pairSelfSends(group, rank));
  plan.before.clear();
  plan.after.clear();
  plan.remote.clear();
  plan.scratchBytes = 0;
  // Where receive r lands: its buffer, or (on a send's) the next piece of scratch, copied
  // to its buffer after the batch.
  auto landing = [&](const Call& r, bool* inScratch) -> void* {
    const size_t bytes = r.count * datatypeSize(r.datatype);
    *inScratch = receiveLandsOnASend(r, group);
    if (!*inScratch) return r.recv;
    void* at = reinterpret_cast<void*>(static_cast<uintptr_t>(plan.scratchBytes));
    plan.after.push_back({at, r.recv, bytes, true, false});
    plan.scratchBytes += (bytes + 63) / 64 * 64;  // each piece 64-byte aligned
    return at;
  };
  for (size_t i = 0; i < self.sends.size(); ++i) {
    const size_t bytes = self.sends[i]->count * datatypeSize(self.sends[i]->datatype);
    if (bytes == 0 || self.sends[i]->send == self.recvs[i]->recv) continue;
    bool inScratch = false;
    void* dst = landing(*self.recvs[i], &inScratch);
    plan.before.push_back({self.sends[i]->send, dst, bytes, false, inScratch});
  }
  for (const Call* op : group) {
    if (op->peer == rank) continue;
    bool inScratch = false;
    void* recv = op->kind == Call::Kind::kRecv ? landing(*op, &inScratch) : nullptr;
    plan.remote.push_back({op, recv, inScratch});
  }
  for (const Call* op : group) plan.madeFor.push_back(madeOf(*op));
  return Status::ok();
}

void placeScratch(PointToPointPlan* plan, void* scratch) {
  auto at = [scratch](const void* offset) {
    return static_cast<char*>(scratch) + reinterpret_cast<uintptr_t>(offset);
  };
  for (PointToPointPlan::Copy& c : plan->before) {
    if (c.dstInScratch) c.dst = at(c.dst);
  }
  for (PointToPointPlan::Copy& c : plan->after) {
    if (c.srcInScratch) c.src = at(c.src);
  }
  for (PointToPointPlan::Remote& r : plan->remote) {
    if (r.recvInScratch) r.recv = at(r.recv);
  }
}

algo::Step pointToPointStep(const Call& op) {
  algo::Step st;
  st.count = op.count * datatypeSize(op.datatype);
  if (op.kind == Call::Kind::kSend) {
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

algo::Step pointToPointStep(const PointToPointPlan::Remote& op) {
  algo::Step st = pointToPointStep(*op.call);
  if (op.call->kind == Call::Kind::kRecv) st.dstOffset = reinterpret_cast<uintptr_t>(op.recv);
  return st;
}

algo::CollArgs collArgsOf(const Call& op, int rank, int nranks) {
  const size_t es = datatypeSize(op.datatype);
  algo::CollArgs args;
  args.collective = op.collective;
  args.rank = rank;
  args.nranks = nranks;
  args.count = op.count;
  args.elemSize = static_cast<uint32_t>(es);
  args.inPlace = isInPlace(op, rank, es);
  args.root = op.root;
  if (op.collective == Collective::kAllToAllv) {  // the only call with per-rank counts
    args.sendCounts = op.sendCounts;
    args.sendDispls = op.sendDispls;
    args.recvCounts = op.recvCounts;
    args.recvDispls = op.recvDispls;
  }
  return args;
}

bool isInPlace(const Call& op, int rank, size_t es) {
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

}  // namespace braid
