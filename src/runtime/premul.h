// Premul-sum operations (braidRedOpCreatePreMulSum): a reduction that sums every rank's
// input times that rank's scalar. Braid's schedules know only the built-in ops, so a call
// with one scales its input (into a copy, or as the windows copy it in) and runs as
// braidSum on the scaled input.
#pragma once

#include <vector>

#include "exec/call.h"
#include "runtime/communicator.h"

namespace braid {

// For a reduction's `op` on `datatype`: a built-in op passes (range-checked); a live
// premul-sum op of comm on the same datatype becomes braidSum with *scale set. Otherwise
// invalid argument naming the op.
Status resolveRedOp(braidComm* comm, braidRedOp_t op, braidDataType_t datatype,
                    braidRedOp_t* resolved, PreMulScale* scale);

// Whether any of ops scales its input.
bool anyPreMul(const Call* ops, size_t n);

// A call that runs on the host cannot read a scalar in device memory: invalid usage,
// naming the fix.
Status checkHostScalars(const std::vector<Call>& ops);

// Bytes of op's input on this rank (all-reduce and reduce: count; reduce-scatter: all).
size_t inputBytes(const Call& op, int rank, int nranks);

// The scalar of a premul-sum as the host reads it now (es bytes into out).
void readHostScalar(const PreMulScale& scale, size_t es, unsigned char* out);

// The host path: each scaling op of ops[0..n) with its input scaled into a copy held in
// *copies (reused: one per scaling op, grown as needed; the scalar read now), and the
// rest as they are.
std::vector<Call> scaleOnHost(const Call* ops, size_t n, int rank, int nranks,
                                   std::vector<std::vector<char>>* copies);

// dst[0..bytes) = src times op's scalar, on `stream` (a device scalar read when the kernel
// runs; a host one now). src may be host memory (copied to dst first) or dst itself.
Status scaleInto(const Call& op, void* dst, const void* src, size_t bytes, void* stream);

// braidRedOpCreatePreMulSum's op on comm (the scalar read at each call when onDevice, else
// copied now), and braidRedOpDestroy's (false: not a live op of comm).
Expected<braidRedOp_t> createPreMulOp(braidComm* comm, const void* scalar,
                                      braidDataType_t datatype, bool onDevice);
bool destroyPreMulOp(braidComm* comm, braidRedOp_t op);

}  // namespace braid
