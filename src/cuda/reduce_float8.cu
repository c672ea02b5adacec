// Reduction kernels for float8 e4m3 and e5m2, every op: computed in float32, rounded once
// to nearest even and saturated to the largest finite value (__NV_SATFINITE; Inf too), as
// the host kernels do. sm_89 and later convert in hardware.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda/reduce_kernel.cuh"

namespace braid::cuda::detail {
namespace {

template <__nv_fp8_interpretation_t kFormat>
struct Float8 {
  using Storage = uint8_t;
  using Acc = float;
  __device__ static float widen(uint8_t x) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(x, kFormat)));
  }
  __device__ static uint8_t narrow(float f) {
    return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, kFormat);
  }
  // Two at a time (the low byte first), as the vector path converts them.
  __device__ static float2 widenPair(uint16_t two) {
    return __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(two, kFormat)));
  }
  __device__ static uint16_t narrowPair(float lo, float hi) {
    return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, kFormat);
  }
};

}  // namespace

int launchReduceFloat8(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                       unsigned blocks, void* stream) {
  switch (datatype) {
    case braidFloat8e4m3:
      return launchOps<Float8<__NV_E4M3>>(p, op, blocks, stream);
    case braidFloat8e5m2:
      return launchOps<Float8<__NV_E5M2>>(p, op, blocks, stream);
    default:
      return -1;
  }
}

int launchScaleFloat8(const ScaleParams& p, braidDataType_t datatype, unsigned blocks,
                      void* stream) {
  switch (datatype) {
    case braidFloat8e4m3:
      return launchScaleAs<Float8<__NV_E4M3>>(p, blocks, stream);
    case braidFloat8e5m2:
      return launchScaleAs<Float8<__NV_E5M2>>(p, blocks, stream);
    default:
      return -1;
  }
}

}  // namespace braid::cuda::detail
