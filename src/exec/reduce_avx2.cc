// The AVX2 build of the reduction kernels: the same templates compiled with -mavx2 -mf16c
// -mfma (see CMakeLists.txt), so loops use 256-bit vectors and float16 converts with F16C.
#include "exec/reduce_tables.h"

#if defined(__x86_64__) || defined(__i386__)

#if !defined(__AVX2__) || !defined(__F16C__) || !defined(__FMA__)
#error "reduce_avx2.cc must be compiled with -mavx2 -mf16c -mfma"
#endif

#include "exec/reduce_kernels.inc"

namespace braid {

const ReduceKernels* reduceTableAvx2(braidDataType_t datatype, braidRedOp_t op) {
  return lookupKernels(datatype, op);
}

}  // namespace braid

#else  // Not x86: there is no AVX2 build; cpuSupportsReduceAvx2() is false.

namespace braid {

const ReduceKernels* reduceTableAvx2(braidDataType_t, braidRedOp_t) { return nullptr; }

}  // namespace braid

#endif
