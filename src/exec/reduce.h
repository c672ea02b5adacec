// Host reduction kernels for every datatype x op.
//
// Kernels are plain functions over contiguous arrays, vectorised (an AVX2 +
// F16C build is chosen at run time when the CPU has it, else a portable one).
// float16, bfloat16 and the float8 types are widened to float32 for each
// operation and rounded back to nearest-even (float8 saturating to its largest
// finite value, as CUDA's __NV_SATFINITE conversions do). avg reduces as sum; its division by nranks happens once,
// in the final step (reduceFinal), so every rank copies one final value.
// Integers wrap; max/min give NaN when either operand is NaN. Pointers must be
// aligned to the element size. BRAID_REDUCE_ISA=generic forces the portable build.
// Stateless; thread-safe.
#pragma once

#include <cstddef>

#include "braid/braid.h"

namespace braid {

// dst[i] = a[i] op b[i]. dst may alias a or b exactly (not partially).
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
// v = a[i] op b[i], divided by `divisor` when the op is avg (ignored otherwise);
// dst0[i] = v and, when dst1 is not null, dst1[i] = v. dst0 may alias a or b;
// dst1 overlaps none of the others.
using ReduceFinalFn = void (*)(void* dst0, void* dst1, const void* a, const void* b,
                               size_t count, int divisor);
// dst[i] = src[i] / divisor (avg over one rank, or a copy for other ops); dst may be src.
using FinalizeFn = void (*)(void* dst, const void* src, size_t count, int divisor);
// dst[i] = src[i] * scalar (one element of the datatype, any alignment): a premul-sum's
// scaling (braidRedOpCreatePreMulSum). Computed as the datatype's product (integers wrap;
// float16, bfloat16 and float8 in float32, where the product of two is exact, rounded
// once), whatever the op. dst may be src.
using ScaleFn = void (*)(void* dst, const void* src, size_t count, const void* scalar);

struct ReduceKernels {
  ReduceFn reduce;
  ReduceFinalFn reduceFinal;
  FinalizeFn finalize;
  ScaleFn scale;
};

// Kernels for a valid (datatype, op); callers validate first.
const ReduceKernels& reduceKernels(braidDataType_t datatype, braidRedOp_t op);

// Bytes per element; 0 for an invalid datatype.
size_t datatypeSize(braidDataType_t datatype);
const char* datatypeName(braidDataType_t datatype);  // "float32", ...; "invalid"
const char* redOpName(braidRedOp_t op);              // "sum", ...; "invalid"
// Which kernel build is in use: "avx2" or "generic".
const char* reduceIsa();

}  // namespace braid
