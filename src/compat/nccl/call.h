// One collective or point-to-point call, checked and mapped to Braid's types,
// and how it runs: now (outside a group) or at ncclGroupEnd.
#pragma once

#include "compat/nccl/compat.h"

namespace braid::nccl {

enum class Kind {
  kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kGather, kScatter, kAlltoAll,
  kSend, kRecv
};

struct Call {
  Kind kind;
  ncclComm* comm;
  const void* send;
  void* recv;
  size_t count;
  braidDataType_t datatype;
  braidRedOp_t op;
  int root;  // root, or peer for send/recv
  braidStream_t stream;
};

// Checks datatype and op (comm is live) and fills *call; the buffers and
// ranks are Braid's to check.
ncclResult_t makeCall(Kind kind, ncclComm* comm, const void* send, void* recv, size_t count,
                      ncclDataType_t datatype, ncclRedOp_t op, int root, cudaStream_t stream,
                      Call* call);

// Inside ncclGroupStart/End: keeps the call for ncclGroupEnd and returns true.
bool queueInGroup(const Call& call);

// Issues one call on Braid, now, on its stream.
braidResult_t issueCall(braidComm_t inner, const Call& call);

// The whole call: group-queued, or issued and its result mapped.
ncclResult_t runCall(Kind kind, ncclComm_t comm, const void* send, void* recv, size_t count,
                     ncclDataType_t datatype, ncclRedOp_t op, int root, cudaStream_t stream,
                     const char* function);

}  // namespace braid::nccl
