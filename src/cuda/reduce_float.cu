// Reduction kernels for float32 and float64, every op.
#include "cuda/reduce_kernel.cuh"

namespace braid::cuda::detail {

int launchReduceFloat(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                      unsigned blocks, void* stream) {
  switch (datatype) {
    case braidFloat32:
      return launchOps<Plain<float>>(p, op, blocks, stream);
    case braidFloat64:
      return launchOps<Plain<double>>(p, op, blocks, stream);
    default:
      return -1;
  }
}

int launchScaleFloat(const ScaleParams& p, braidDataType_t datatype, unsigned blocks,
                     void* stream) {
  switch (datatype) {
    case braidFloat32:
      return launchScaleAs<Plain<float>>(p, blocks, stream);
    case braidFloat64:
      return launchScaleAs<Plain<double>>(p, blocks, stream);
    default:
      return -1;
  }
}

}  // namespace braid::cuda::detail
