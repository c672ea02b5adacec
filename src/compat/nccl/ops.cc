// NCCL's datatypes and reduction ops on Braid's, and premul-sum ops
// (ncclRedOpCreatePreMulSum): Braid has no such op, so a call with one scales
// a copy of its input (call.cc) and sums.
#include <algorithm>
#include <cstring>

#include "compat/nccl/compat.h"
#include "compat/nccl/scale.h"

namespace braid::nccl {
namespace {

const char* typeName(int datatype) {
  static const char* const kNames[] = {"ncclInt8",    "ncclUint8",    "ncclInt32",
                                       "ncclUint32",  "ncclInt64",    "ncclUint64",
                                       "ncclFloat16", "ncclFloat32",  "ncclFloat64",
                                       "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return datatype >= 0 && datatype < ncclNumTypes ? kNames[datatype] : "unknown";
}

}  // namespace

ncclResult_t toBraidType(ncclComm* comm, ncclDataType_t datatype, braidDataType_t* out) {
  const int t = static_cast<int>(datatype);
  if (t < 0 || t >= ncclNumTypes) {
    return fail(comm, ncclInvalidArgument,
                "datatype " + std::to_string(t) + " is not an ncclDataType_t (0.." +
                    std::to_string(ncclNumTypes - 1) + ")");
  }
  // Braid's values are NCCL's (float8 included); a type of a newer NCCL that
  // Braid lacks is refused by name.
  if (t >= braidNumTypes) {
    return fail(comm, ncclInvalidArgument,
                std::string(typeName(t)) + " is not supported by this Braid");
  }
  *out = static_cast<braidDataType_t>(t);
  return ncclSuccess;
}

ncclResult_t toBraidOp(ncclComm* comm, ncclRedOp_t op, braidDataType_t datatype,
                       braidRedOp_t* out, PreMulOp* preMul, bool* isPreMul) {
  const int o = static_cast<int>(op);
  if (o >= 0 && o < ncclNumOps) {
    *out = static_cast<braidRedOp_t>(o);
    *isPreMul = false;
    return ncclSuccess;
  }
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    for (const PreMulOp& p : comm->preMulOps) {
      if (p.handle != op) continue;
      *preMul = p;
      found = true;
      break;
    }
  }
  if (!found) {
    return fail(comm, ncclInvalidArgument,
                "op " + std::to_string(o) +
                    " is neither a built-in ncclRedOp_t (0..4) nor a live op from "
                    "ncclRedOpCreatePreMulSum on this communicator");
  }
  if (preMul->datatype != datatype) {
    return fail(comm, ncclInvalidArgument,
                "op " + std::to_string(o) + " was created for " + typeName(preMul->datatype) +
                    " and is used with " + typeName(datatype));
  }
  *out = braidSum;
  *isPreMul = true;
  return ncclSuccess;
}

}  // namespace braid::nccl

using namespace braid::nccl;

extern "C" {

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  CommGuard guard(comm, "ncclRedOpCreatePreMulSum");
  if (!guard.ok()) return guard.result();
  braidDataType_t type;
  if (op == nullptr) return fail(comm, ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op is NULL");
  if (scalar == nullptr) {
    return fail(comm, ncclInvalidArgument, "ncclRedOpCreatePreMulSum: scalar is NULL");
  }
  if (ncclResult_t r = toBraidType(comm, datatype, &type); r != ncclSuccess) return r;
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return fail(comm, ncclInvalidArgument,
                "ncclRedOpCreatePreMulSum: residence " + std::to_string(residence) +
                    " is neither ncclScalarDevice nor ncclScalarHostImmediate");
  }
  PreMulOp p{};
  p.datatype = type;
  if (residence == ncclScalarHostImmediate) {
    std::memcpy(p.scalar, scalar, elementSize(type));
  } else {
    p.scalarPtr = scalar;  // dereferenced by each collective that uses the op
  }
  std::lock_guard<std::mutex> lock(comm->mu);
  if (comm->nextOp == ncclMaxRedOp) {
    return fail(nullptr, ncclInvalidUsage, "ncclRedOpCreatePreMulSum: no op handles left");
  }
  p.handle = static_cast<ncclRedOp_t>(comm->nextOp++);
  comm->preMulOps.push_back(p);
  *op = p.handle;
  return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  CommGuard guard(comm, "ncclRedOpDestroy");
  if (!guard.ok()) return guard.result();
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    auto it = std::find_if(comm->preMulOps.begin(), comm->preMulOps.end(),
                           [op](const PreMulOp& p) { return p.handle == op; });
    if (it != comm->preMulOps.end()) {
      comm->preMulOps.erase(it);
      return ncclSuccess;
    }
  }
  return fail(comm, ncclInvalidArgument,
              "ncclRedOpDestroy: op " + std::to_string(static_cast<int>(op)) +
                  " is not an op from ncclRedOpCreatePreMulSum on this communicator "
                  "(built-in ops are not destroyed)");
}

}  // extern "C"

BRAID_NCCL_ALIAS(ncclRedOpCreatePreMulSum)
BRAID_NCCL_ALIAS(ncclRedOpDestroy)
