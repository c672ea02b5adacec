#include "compat/nccl/call.h"

#include "compat/nccl/profiler.h"

namespace braid::nccl {
namespace {

bool reduces(Kind k) {
  return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter;
}

}  // namespace

braidResult_t issueCall(braidComm_t inner, const Call& c) {
  const void* send = c.send;
  braidStream_t stream = c.stream;
  switch (c.kind) {
    case Kind::kAllReduce:
      return braidAllReduce(send, c.recv, c.count, c.datatype, c.op, inner, stream);
    case Kind::kAllGather: return braidAllGather(send, c.recv, c.count, c.datatype, inner, stream);
    case Kind::kReduceScatter:
      return braidReduceScatter(send, c.recv, c.count, c.datatype, c.op, inner, stream);
    case Kind::kBroadcast:
      return braidBroadcast(send, c.recv, c.count, c.datatype, c.root, inner, stream);
    case Kind::kReduce:
      return braidReduce(send, c.recv, c.count, c.datatype, c.op, c.root, inner, stream);
    case Kind::kGather: return braidGather(send, c.recv, c.count, c.datatype, c.root, inner, stream);
    case Kind::kScatter:
      return braidScatter(send, c.recv, c.count, c.datatype, c.root, inner, stream);
    case Kind::kAlltoAll: return braidAlltoAll(send, c.recv, c.count, c.datatype, inner, stream);
    case Kind::kSend: return braidSend(send, c.count, c.datatype, c.root, inner, stream);
    case Kind::kRecv: return braidRecv(c.recv, c.count, c.datatype, c.root, inner, stream);
  }
  return braidInternalError;
}

ncclResult_t makeCall(Kind kind, ncclComm* comm, const void* send, void* recv, size_t count,
                      ncclDataType_t datatype, ncclRedOp_t op, int root, cudaStream_t stream,
                      Call* call) {
  Call c{};
  c.kind = kind;
  c.comm = comm;
  c.send = send;
  c.recv = recv;
  c.count = count;
  c.root = root;
  c.op = braidSum;
  // The agreed convention: a CUDA stream passes through; Braid tells a live
  // host stream (braidStreamCreate) from a CUDA one.
  c.stream = reinterpret_cast<braidStream_t>(stream);
  if (ncclResult_t r = toBraidType(comm, datatype, &c.datatype); r != ncclSuccess) return r;
  if (reduces(kind)) {
    if (ncclResult_t r = toBraidOp(comm, op, c.datatype, &c.op); r != ncclSuccess) return r;
  }
  *call = c;
  return ncclSuccess;
}


ncclResult_t runCall(Kind kind, ncclComm_t comm, const void* send, void* recv, size_t count,
                     ncclDataType_t datatype, ncclRedOp_t op, int root, cudaStream_t stream,
                     const char* function) {
  CommGuard guard(comm, function);
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  Call call;
  r = makeCall(kind, comm, send, recv, count, datatype, op, root, stream, &call);
  if (r != ncclSuccess) return r;
  if (queueInGroup(call)) return ncclSuccess;
  const DeviceScope scope(comm->device);
  const ProfiledCalls profiled(comm, inner, &call, 1, false);
  return fromBraid(comm, issueCall(inner, call));
}

}  // namespace braid::nccl
