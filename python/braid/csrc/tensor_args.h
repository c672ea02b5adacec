// What the native backend takes from torch's arguments before anything reaches Braid:
// a tensor's (address, count, datatype), the reduction, and the errors a caller sees
// when they do not fit. The checks and their messages are the Python group's
// (python/braid/_torch_common.py), so both groups refuse the same calls the same way.
//
// Thread-safety: pure functions.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "braid/braid.h"

namespace braid::torch_ext {

// An error with braidResult_t's code; the module maps it to braid.errors' class for the
// code (BraidTimeoutError, InvalidArgumentError, ...), message as is.
class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const {
    return code_;
  }

 private:
  int code_;
};

// A Python TypeError (a dtype or op the call cannot take).
class TypeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A contiguous CPU or CUDA tensor as Braid sees it (complex: as its real pairs).
struct Buffer {
  void* ptr = nullptr;
  size_t count = 0;
  braidDataType_t dtype = braidFloat32;
};

// Refuses devices other than CPU and CUDA (InvalidUsage, naming the device).
void checkDevice(const at::Tensor& t);

// t's Buffer; `what` names the argument in errors ("all_gather input").
Buffer bufferOf(const at::Tensor& t, const std::string& what);

// The one tensor of a list (torch's one-tensor-per-process calls).
const at::Tensor& one(const std::vector<at::Tensor>& tensors, const char* what);

// The reduction for op on t: its Braid code, or for PREMUL_SUM, the factor (isPremul).
struct Reduction {
  braidRedOp_t op = braidSum;
  bool isPremul = false;
  double factor = 0;
};
Reduction reductionOf(const c10d::ReduceOp& op, const at::Tensor& t);

// The single device of a call's tensors (empty ones aside): CPU, or one CUDA device.
at::Device deviceOf(const std::string& what, const std::vector<at::Tensor>& tensors);

// Element counts and displacements for all-to-all-v (splits in rows of t).
std::vector<size_t> splitCounts(const at::Tensor& t, const std::vector<int64_t>& splits,
                                int size);
std::vector<size_t> displacements(const std::vector<size_t>& counts);

}  // namespace braid::torch_ext
