// NCCL's collectives and point-to-point calls, each one call to runCall
// (call.cc): checks, premul-sum, group queueing, then Braid.
#include "compat/nccl/call.h"

using namespace braid::nccl;

extern "C" {

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return runCall(Kind::kAllReduce, comm, sendbuff, recvbuff, count, datatype, op, 0, stream,
                 "ncclAllReduce");
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return runCall(Kind::kAllGather, comm, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0,
                 stream, "ncclAllGather");
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return runCall(Kind::kReduceScatter, comm, sendbuff, recvbuff, recvcount, datatype, op, 0,
                 stream, "ncclReduceScatter");
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return runCall(Kind::kBroadcast, comm, sendbuff, recvbuff, count, datatype, ncclSum, root,
                 stream, "ncclBroadcast");
}

// The deprecated in-place broadcast.
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream) {
  return runCall(Kind::kBroadcast, comm, buff, buff, count, datatype, ncclSum, root, stream,
                 "ncclBcast");
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return runCall(Kind::kReduce, comm, sendbuff, recvbuff, count, datatype, op, root, stream,
                 "ncclReduce");
}

ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return runCall(Kind::kGather, comm, sendbuff, recvbuff, count, datatype, ncclSum, root, stream,
                 "ncclGather");
}

ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return runCall(Kind::kScatter, comm, sendbuff, recvbuff, count, datatype, ncclSum, root, stream,
                 "ncclScatter");
}

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return runCall(Kind::kAlltoAll, comm, sendbuff, recvbuff, count, datatype, ncclSum, 0, stream,
                 "ncclAlltoAll");
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return runCall(Kind::kSend, comm, sendbuff, nullptr, count, datatype, ncclSum, peer, stream,
                 "ncclSend");
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return runCall(Kind::kRecv, comm, nullptr, recvbuff, count, datatype, ncclSum, peer, stream,
                 "ncclRecv");
}

}  // extern "C"

BRAID_NCCL_ALIAS(ncclAllReduce)
BRAID_NCCL_ALIAS(ncclAllGather)
BRAID_NCCL_ALIAS(ncclReduceScatter)
BRAID_NCCL_ALIAS(ncclBroadcast)
BRAID_NCCL_ALIAS(ncclBcast)
BRAID_NCCL_ALIAS(ncclReduce)
BRAID_NCCL_ALIAS(ncclGather)
BRAID_NCCL_ALIAS(ncclScatter)
BRAID_NCCL_ALIAS(ncclAlltoAll)
BRAID_NCCL_ALIAS(ncclSend)
BRAID_NCCL_ALIAS(ncclRecv)
