// Reduction kernels for the integer datatypes (int8 .. uint64), every op.
#include "cuda/reduce_kernel.cuh"

namespace braid::cuda::detail {

int launchReduceInt(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                    unsigned blocks, void* stream) {
  switch (datatype) {
    case braidInt8:
      return launchOps<Plain<int8_t>>(p, op, blocks, stream);
    case braidUint8:
      return launchOps<Plain<uint8_t>>(p, op, blocks, stream);
    case braidInt32:
      return launchOps<Plain<int32_t>>(p, op, blocks, stream);
    case braidUint32:
      return launchOps<Plain<uint32_t>>(p, op, blocks, stream);
    case braidInt64:
      return launchOps<Plain<int64_t>>(p, op, blocks, stream);
    case braidUint64:
      return launchOps<Plain<uint64_t>>(p, op, blocks, stream);
    default:
      return -1;
  }
}

int launchScaleInt(const ScaleParams& p, braidDataType_t datatype, unsigned blocks, void* stream) {
  switch (datatype) {
    case braidInt8:
      return launchScaleAs<Plain<int8_t>>(p, blocks, stream);
    case braidUint8:
      return launchScaleAs<Plain<uint8_t>>(p, blocks, stream);
    case braidInt32:
      return launchScaleAs<Plain<int32_t>>(p, blocks, stream);
    case braidUint32:
      return launchScaleAs<Plain<uint32_t>>(p, blocks, stream);
    case braidInt64:
      return launchScaleAs<Plain<int64_t>>(p, blocks, stream);
    case braidUint64:
      return launchScaleAs<Plain<uint64_t>>(p, blocks, stream);
    default:
      return -1;
  }
}

}  // namespace braid::cuda::detail
