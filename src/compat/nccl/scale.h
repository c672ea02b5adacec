// Element sizes and the premul-sum scaling of host buffers.
#pragma once

#include <cstddef>

#include "braid/braid.h"

namespace braid::nccl {

size_t elementSize(braidDataType_t datatype);

// dst[i] = src[i] * scalar (scalar: one element of `datatype`), rounded as the
// datatype rounds; integers wrap. Half and bfloat16 products are exact in
// float, so one rounding gives the correctly rounded result.
void scaleBuffer(void* dst, const void* src, size_t count, braidDataType_t datatype,
                 const void* scalar);

}  // namespace braid::nccl
