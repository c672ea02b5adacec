#include "compat/nccl/call.h"

#include "compat/nccl/scale.h"

namespace braid::nccl {
namespace {

bool reduces(Kind k) {
  return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter;
}

// Reads a premul-sum op's scalar: its value, or (ncclScalarDevice) what its
// pointer holds now.
const void* scalarOf(const PreMulOp& p) { return p.scalarPtr != nullptr ? p.scalarPtr : p.scalar; }

// The collective on Braid with `send` as its input.
braidResult_t issueBraid(braidComm_t inner, const Call& c, const void* send, braidStream_t stream) {
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

// A premul-sum: the input scaled into a copy, then summed. The copy is read
// when the operation runs, so with a stream it is made after the stream's
// earlier work and the operation completes before the copy goes: on a
// stream, a premul-sum call is synchronous.
braidResult_t issuePreMul(braidComm_t inner, const Call& c, std::vector<char>* copy) {
  int nranks = 1;
  if (braidResult_t r = braidCommCount(inner, &nranks); r != braidSuccess) return r;
  const size_t elems = c.kind == Kind::kReduceScatter ? c.count * static_cast<size_t>(nranks)
                                                      : c.count;
  if (c.send == nullptr && elems > 0) {
    return issueBraid(inner, c, nullptr, c.stream);  // Braid names the NULL buffer
  }
  if (c.stream != nullptr) {
    if (braidResult_t r = braidStreamSynchronize(c.stream); r != braidSuccess) return r;
  }
  copy->resize(elems * elementSize(c.datatype));
  scaleBuffer(copy->data(), c.send, elems, c.datatype, scalarOf(c.preMul));
  return issueBraid(inner, c, copy->data(), nullptr);
}

}  // namespace

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
    ncclResult_t r = toBraidOp(comm, op, c.datatype, &c.op, &c.preMul, &c.isPreMul);
    if (r != ncclSuccess) return r;
    if (c.isPreMul && (isCudaDevicePointer(send) || isCudaDevicePointer(c.preMul.scalarPtr))) {
      return fail(comm, ncclInvalidUsage,
                  "a premul-sum op on CUDA device memory needs Braid's GPU path, which does not "
                  "scale yet; use ncclSum and scale, or host buffers");
    }
  }
  *call = c;
  return ncclSuccess;
}

braidResult_t issueCall(braidComm_t inner, const Call& call,
                        std::vector<std::vector<char>>* scratch) {
  if (!call.isPreMul) return issueBraid(inner, call, call.send, call.stream);
  if (scratch == nullptr) {
    std::vector<char> copy;
    return issuePreMul(inner, call, &copy);
  }
  scratch->emplace_back();
  return issuePreMul(inner, call, &scratch->back());
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
  return fromBraid(comm, issueCall(inner, call, nullptr));
}

}  // namespace braid::nccl
