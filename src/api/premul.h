// Premul-sum operations (braidRedOpCreatePreMulSum): a reduction that sums every rank's
// input times that rank's scalar. Braid's schedules know only the built-in ops, so a call
// with one scales its input into a copy (on the host, or on the device in stream order)
// and runs as braidSum on the copy.
#pragma once

#include <vector>

#include "api/ops.h"

namespace braid {

// For a reduction's `op` on `datatype`: a built-in op passes (range-checked); a live
// premul-sum op of comm on the same datatype becomes braidSum with *scale set. Otherwise
// invalid argument naming the op.
Status resolveRedOp(braidComm* comm, braidRedOp_t op, braidDataType_t datatype,
                    braidRedOp_t* resolved, PreMulScale* scale);

// Whether any of ops scales its input.
bool anyPreMul(const OpRequest* ops, size_t n);

// A call that runs on the host cannot read a scalar in device memory: invalid usage,
// naming the fix.
Status checkHostScalars(const std::vector<OpRequest>& ops);

// The scalar of a premul-sum as the host reads it now (es bytes into out).
void readHostScalar(const PreMulScale& scale, size_t es, unsigned char* out);

// The host path: each scaling op of ops[0..n) with its input scaled into a copy held in
// *copies (reused: one per scaling op, grown as needed; the scalar read now), and the
// rest as they are.
std::vector<OpRequest> scaleOnHost(const OpRequest* ops, size_t n, int rank, int nranks,
                                   std::vector<std::vector<char>>* copies);

// dst[0..bytes) = src times op's scalar, on `stream` (a device scalar read when the kernel
// runs; a host one now). src may be host memory (copied to dst first) or dst itself.
Status scaleInto(const OpRequest& op, void* dst, const void* src, size_t bytes, void* stream);

// The device path: each scaling op's input scaled on `stream` into device memory
// allocated on it (its send pointer replaced; the scalar read on the device when the
// stream gets there, or, in host memory, now). The allocations are appended to *scratch,
// for freeScaled to give back once the call is enqueued.
Status scaleOnDevice(std::vector<OpRequest>* ops, int rank, int nranks, void* stream,
                     std::vector<void*>* scratch);
Status freeScaled(const std::vector<void*>& scratch, void* stream);

// run() over *ops with every scaling op's input scaled on `stream` first (scaleOnDevice),
// the copies freed on the stream after it.
template <typename Run>
Status withScaledInputs(std::vector<OpRequest>* ops, int rank, int nranks, void* stream, Run run) {
  if (!anyPreMul(ops->data(), ops->size())) return run();
  std::vector<void*> copies;
  Status st = scaleOnDevice(ops, rank, nranks, stream, &copies);
  if (st.isOk()) st = run();
  Status freed = freeScaled(copies, stream);
  return st.isOk() ? freed : st;
}

}  // namespace braid
