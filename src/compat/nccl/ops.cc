// NCCL's datatypes and reduction ops on Braid's, and premul-sum ops
// (ncclRedOpCreatePreMulSum) over Braid's (braidRedOpCreatePreMulSum).
#include <algorithm>
#include <cstring>

#include "compat/nccl/compat.h"
#include "compat/nccl/group.h"

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

size_t elementSize(braidDataType_t datatype) {
  // Indexed by Braid's datatype values (NCCL's): int8, uint8, int32, uint32,
  // int64, uint64, float16, float32, float64, bfloat16, float8 e4m3, e5m2.
  static constexpr size_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  static_assert(sizeof(kSizes) / sizeof(kSizes[0]) == braidNumTypes, "a datatype has no size");
  return kSizes[datatype];
}

ncclResult_t toBraidOp(ncclComm* comm, ncclRedOp_t op, braidDataType_t datatype,
                       braidRedOp_t* out) {
  const int o = static_cast<int>(op);
  *out = static_cast<braidRedOp_t>(o);  // Braid's values are NCCL's, premul-sum ops too
  if (o >= 0 && o < ncclNumOps) return ncclSuccess;
  int madeFor = -1;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    for (const PreMulOp& p : comm->preMulOps) {
      if (p.handle == op) madeFor = p.datatype;
    }
  }
  if (madeFor < 0) {
    return fail(comm, ncclInvalidArgument,
                "op " + std::to_string(o) +
                    " is neither a built-in ncclRedOp_t (0..4) nor a live op from "
                    "ncclRedOpCreatePreMulSum on this communicator");
  }
  if (madeFor != datatype) {
    return fail(comm, ncclInvalidArgument,
                "op " + std::to_string(o) + " was created for " + typeName(madeFor) +
                    " and is used with " + typeName(datatype));
  }
  return ncclSuccess;
}

}  // namespace braid::nccl

using namespace braid::nccl;

extern "C" {

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  CommGuard guard(comm, "ncclRedOpCreatePreMulSum");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  braidDataType_t type;
  if (op == nullptr) return fail(comm, ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op is NULL");
  if (ncclResult_t t = toBraidType(comm, datatype, &type); t != ncclSuccess) return t;
  // ncclScalarResidence_t's values are braidScalarResidence_t's; Braid checks them.
  braidRedOp_t made;
  r = fromBraid(comm, braidRedOpCreatePreMulSum(&made, scalar, type,
                                                static_cast<braidScalarResidence_t>(residence),
                                                inner));
  if (r != ncclSuccess) return r;
  *op = static_cast<ncclRedOp_t>(made);
  std::lock_guard<std::mutex> lock(comm->mu);
  comm->preMulOps.push_back({*op, type});
  return ncclSuccess;
}

// Inside a group, Braid's op lives until the group's calls are issued
// (ncclGroupEnd); new calls cannot name it from now on.
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  CommGuard guard(comm, "ncclRedOpDestroy");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    auto it = std::find_if(comm->preMulOps.begin(), comm->preMulOps.end(),
                           [op](const PreMulOp& p) { return p.handle == op; });
    if (it != comm->preMulOps.end()) {
      comm->preMulOps.erase(it);
      found = true;
    }
  }
  if (!found) {
    return fail(comm, ncclInvalidArgument,
                "ncclRedOpDestroy: op " + std::to_string(static_cast<int>(op)) +
                    " is not an op from ncclRedOpCreatePreMulSum on this communicator "
                    "(built-in ops are not destroyed)");
  }
  if (inGroup()) {
    deferOpDestroy(comm, static_cast<braidRedOp_t>(op));
    return ncclSuccess;
  }
  return fromBraid(comm, braidRedOpDestroy(static_cast<braidRedOp_t>(op), inner));
}

}  // extern "C"

BRAID_NCCL_ALIAS(ncclRedOpCreatePreMulSum)
BRAID_NCCL_ALIAS(ncclRedOpDestroy)
