// Reduction kernels for float16 and bfloat16, every op: computed in float32 and rounded
// once to nearest even, as the host kernels do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/reduce_kernel.cuh"

namespace braid::cuda::detail {
namespace {

struct Half {
  using Storage = uint16_t;
  using Acc = float;
  __device__ static float widen(uint16_t x) { return __half2float(__ushort_as_half(x)); }
  __device__ static uint16_t narrow(float f) { return __half_as_ushort(__float2half_rn(f)); }
};

struct Bfloat {
  using Storage = uint16_t;
  using Acc = float;
  __device__ static float widen(uint16_t x) { return __bfloat162float(__ushort_as_bfloat16(x)); }
  __device__ static uint16_t narrow(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
};

}  // namespace

int launchReduceHalf(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                     unsigned blocks, void* stream) {
  switch (datatype) {
    case braidFloat16:
      return launchOps<Half>(p, op, blocks, stream);
    case braidBfloat16:
      return launchOps<Bfloat>(p, op, blocks, stream);
    default:
      return -1;
  }
}

int launchScaleHalf(const ScaleParams& p, braidDataType_t datatype, unsigned blocks, void* stream) {
  switch (datatype) {
    case braidFloat16:
      return launchScaleAs<Half>(p, blocks, stream);
    case braidBfloat16:
      return launchScaleAs<Bfloat>(p, blocks, stream);
    default:
      return -1;
  }
}

}  // namespace braid::cuda::detail
