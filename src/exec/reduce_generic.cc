// The portable build of the reduction kernels: the target's baseline ISA at -O3 (SSE2 on
// x86-64). Used where the CPU lacks AVX2/F16C/FMA, or with BRAID_REDUCE_ISA=generic.
#include "exec/reduce_kernels.inc"
#include "exec/reduce_tables.h"

namespace braid {

const ReduceKernels* reduceTableGeneric(braidDataType_t datatype, braidRedOp_t op) {
  return lookupKernels(datatype, op);
}

}  // namespace braid
