// The two builds of the reduction kernels, private to src/exec: reduce.cc picks one at
// run time; tests and benchmarks may call either directly. Stateless; thread-safe.
#pragma once

#include "braid/braid.h"
#include "exec/reduce.h"

namespace braid {

// Kernels of the portable build; nullptr for an invalid (datatype, op).
const ReduceKernels* reduceTableGeneric(braidDataType_t datatype, braidRedOp_t op);
// Kernels of the AVX2 + F16C + FMA build; nullptr for an invalid (datatype, op), or on a
// target without that build. Run them only where cpuSupportsReduceAvx2().
const ReduceKernels* reduceTableAvx2(braidDataType_t datatype, braidRedOp_t op);
// Whether this CPU (and OS) can run the AVX2 build.
bool cpuSupportsReduceAvx2();

}  // namespace braid
