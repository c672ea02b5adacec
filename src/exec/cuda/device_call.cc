#include "exec/cuda/device_call.h"

#include <algorithm>

#include "cuda/device.h"
#include "exec/reduce.h"

namespace braid {

using algo::Collective;

Status captureRefusal(const std::string& why) {
  return invalidUsage("stream is capturing a CUDA graph and this call cannot be captured: " + why +
                      "; make the call outside the capture");
}

Expected<PointToPointPlan> pointToPointPlan(const std::vector<Call>& ops, int rank) {
  std::vector<const Call*> group;
  for (const Call& op : ops) {
    if (op.kind != Call::Kind::kCollective) group.push_back(&op);
  }
  return pointToPointPlan(group, rank);
}

Status enqueueCopies(const std::vector<PointToPointPlan::Copy>& copies, void* stream) {
  for (const PointToPointPlan::Copy& c : copies) {
    BRAID_TRY(cuda::copyAsync(c.dst, c.src, c.bytes, stream));
  }
  return Status::ok();
}

std::vector<StagedRegion> regionsOf(const Call& op, int rank, int nranks) {
  const size_t es = datatypeSize(op.datatype);
  if (op.kind == Call::Kind::kSend) return {{op.send, op.count * es, false}};
  if (op.kind == Call::Kind::kRecv) return {{op.recv, op.count * es, true}};
  const size_t block = op.count * es;
  const size_t all = block * static_cast<size_t>(nranks);
  const bool isRoot = rank == op.root;
  size_t in = block, out = block;
  // clang-format off
  switch (op.collective) {
    case Collective::kAllGather: out = all; break;
    case Collective::kReduceScatter: in = all; break;
    case Collective::kBroadcast: in = isRoot ? block : 0; break;
    case Collective::kReduce: out = isRoot ? block : 0; break;
    case Collective::kGather: out = isRoot ? all : 0; break;
    case Collective::kScatter: in = isRoot ? all : 0; break;
    case Collective::kAllToAll: in = out = all; break;
    case Collective::kAllToAllv:
      in = out = 0;
      for (int p = 0; p < nranks; ++p) {  // an empty block's displacement may point anywhere
        const uint64_t sendEnd = op.sendCounts[p] ? op.sendDispls[p] + op.sendCounts[p] : 0;
        const uint64_t recvEnd = op.recvCounts[p] ? op.recvDispls[p] + op.recvCounts[p] : 0;
        in = std::max<size_t>(in, sendEnd * es);
        out = std::max<size_t>(out, recvEnd * es);
      }
      break;
    default: break;
  }
  // clang-format on
  return {{op.send, in, false}, {op.recv, out, true}};
}

}  // namespace braid
