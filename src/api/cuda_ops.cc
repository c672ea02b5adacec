#include "api/cuda_ops.h"

#include <algorithm>

#include "cuda/device.h"
#include "exec/cuda_staging.h"
#include "exec/reduce.h"

namespace braid {
namespace {

using algo::Collective;

bool isHostStream(braidStream_t stream) { return stream != nullptr && isValidStream(stream); }

// The bytes `op` reads and writes on this rank, as braid.h lays out each call.
void addRegions(const OpRequest& op, int rank, int nranks, std::vector<StagedRegion>* out) {
  const size_t es = datatypeSize(op.datatype);
  if (op.kind == OpRequest::Kind::kSend) {
    out->push_back({op.send, op.count * es, false});
    return;
  }
  if (op.kind == OpRequest::Kind::kRecv) {
    out->push_back({op.recv, op.count * es, true});
    return;
  }
  const size_t block = op.count * es;
  const size_t all = block * static_cast<size_t>(nranks);
  const bool isRoot = rank == op.root;
  size_t in = block, outBytes = block;
  switch (op.collective) {
    case Collective::kAllGather:
      outBytes = all;
      break;
    case Collective::kReduceScatter:
      in = all;
      break;
    case Collective::kBroadcast:
      in = isRoot ? block : 0;
      break;
    case Collective::kReduce:
      outBytes = isRoot ? block : 0;
      break;
    case Collective::kGather:
      outBytes = isRoot ? all : 0;
      break;
    case Collective::kScatter:
      in = isRoot ? all : 0;
      break;
    case Collective::kAllToAll:
      in = outBytes = all;
      break;
    case Collective::kAllToAllv:
      in = outBytes = 0;
      for (int p = 0; p < nranks; ++p) {
        in = std::max<size_t>(in, (op.sendDispls[p] + op.sendCounts[p]) * es);
        outBytes = std::max<size_t>(outBytes, (op.recvDispls[p] + op.recvCounts[p]) * es);
      }
      break;
    default:
      break;
  }
  out->push_back({op.send, in, false});
  out->push_back({op.recv, outBytes, true});
}

Status runStaged(braidComm* comm, std::vector<OpRequest> ops, braidStream_t stream) {
  const int rank = comm->comm->rank(), nranks = comm->comm->nranks();
  std::vector<StagedRegion> regions;
  for (const OpRequest& op : ops) addRegions(op, rank, nranks, &regions);
  if (isHostStream(stream)) {
    return invalidUsage(
        "a buffer is in device memory but the stream is a host stream from "
        "braidStreamCreate; pass a cudaStream_t (or NULL) for device buffers");
  }
  void* cudaStream = stream;  // NULL: the legacy default stream
  BRAID_ASSIGN_OR_RETURN(StagedBuffers staged, StagedBuffers::stageIn(regions, cudaStream));
  for (OpRequest& op : ops) {
    op.send = staged.hostOf(op.send);
    op.recv = staged.hostOf(op.recv);
  }
  BRAID_TRY(runOps(comm, ops));
  return staged.stageOut(cudaStream);
}

}  // namespace

Status checkCudaStream(braidStream_t stream) {
  if (!cuda::compiled()) {
    return invalidArgument("stream is neither NULL nor a stream from braidStreamCreate");
  }
  Status st = cuda::checkStream(stream);
  if (st.isOk()) return st;
  return invalidArgument(
      "stream is neither NULL, a stream from braidStreamCreate, nor a CUDA "
      "stream (" +
      st.message() + ")");
}

bool usesCuda(const std::vector<OpRequest>& ops, braidStream_t stream) {
  if (!cuda::compiled()) return false;
  if (stream != nullptr && !isValidStream(stream)) return true;  // checked as a CUDA stream
  if (!cuda::hasDevice()) return false;
  for (const OpRequest& op : ops) {
    if (cuda::memoryKind(op.send) == cuda::MemoryKind::kDevice ||
        cuda::memoryKind(op.recv) == cuda::MemoryKind::kDevice) {
      return true;
    }
  }
  return false;
}

braidResult_t issueCudaOps(braidComm* comm, std::vector<OpRequest> ops, braidStream_t stream) {
  return finish(comm, runStaged(comm, std::move(ops), stream));
}

}  // namespace braid
