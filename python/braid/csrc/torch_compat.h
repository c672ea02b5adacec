// Where torch 1.13's and 2.x's c10d differ, in one place. The native backend is one source:
// on 1.13 it is a c10d::ProcessGroup (which torch takes as the group itself); on 2.x a
// c10d::Backend (which torch's ProcessGroup wraps, per device).
#pragma once

#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#if TORCH_VERSION_MAJOR >= 2
#define BRAID_TORCH_2 1
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#define BRAID_TORCH_2 0
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace braid::torch_ext {

#if BRAID_TORCH_2
using BackendBase = c10d::Backend;
using PreMulSupplement = c10d::PreMulSumSupplement;
inline at::Tensor premulTensorFactor(const PreMulSupplement& s) {
  return s.tensor_factor;
}
#else
using BackendBase = c10d::ProcessGroup;
using PreMulSupplement = c10d::NCCLPreMulSumSupplement;
inline at::Tensor premulTensorFactor(const PreMulSupplement& s) {
  return s.tensor_factors.empty() ? at::Tensor() : s.tensor_factors[0];
}
#endif

}  // namespace braid::torch_ext
