#include "tensor_args.h"

#include <c10/util/irange.h>

#include <set>

#include "torch_compat.h"

namespace braid::torch_ext {
namespace {

using RedOpType = c10d::ReduceOp::RedOpType;

// torch's Python name of a dtype, as the Python group's messages print it.
std::string torchName(at::ScalarType type) {
  switch (type) {
    case at::kShort:
      return "torch.int16";
    case at::kChar:
      return "torch.int8";
    case at::kByte:
      return "torch.uint8";
    case at::kHalf:
      return "torch.float16";
    case at::kComplexHalf:
      return "torch.complex32";
    default:
      return std::string("torch.") + c10::toString(type);
  }
}

bool braidType(at::ScalarType type, braidDataType_t* out) {
  switch (type) {
    case at::kChar: *out = braidInt8; return true;
    case at::kByte: *out = braidUint8; return true;
    case at::kBool: *out = braidUint8; return true;
    case at::kInt: *out = braidInt32; return true;
    case at::kLong: *out = braidInt64; return true;
    case at::kHalf: *out = braidFloat16; return true;
    case at::kFloat: *out = braidFloat32; return true;
    case at::kDouble: *out = braidFloat64; return true;
    case at::kBFloat16: *out = braidBfloat16; return true;
    default: return false;
  }
}

const char* opName(RedOpType kind) {
  switch (kind) {
    case RedOpType::SUM: return "ReduceOp.SUM";
    case RedOpType::AVG: return "ReduceOp.AVG";
    case RedOpType::PRODUCT: return "ReduceOp.PRODUCT";
    case RedOpType::MIN: return "ReduceOp.MIN";
    case RedOpType::MAX: return "ReduceOp.MAX";
    case RedOpType::BAND: return "ReduceOp.BAND";
    case RedOpType::BOR: return "ReduceOp.BOR";
    case RedOpType::BXOR: return "ReduceOp.BXOR";
    default: return "ReduceOp.PREMUL_SUM";
  }
}

double premulFactor(const c10d::ReduceOp& op) {
  auto* supplement = dynamic_cast<PreMulSupplement*>(op.supplement_.get());
  if (supplement == nullptr) {
    throw Error(braidInvalidArgument, "braid: PREMUL_SUM without its factor");
  }
  at::Tensor factor = premulTensorFactor(*supplement);
  return factor.defined() ? factor.item<double>() : supplement->double_factor;
}

}  // namespace

void checkDevice(const at::Tensor& t) {
  if (!t.device().is_cpu() && !t.device().is_cuda()) {
    throw Error(braidInvalidUsage, "braid: " + t.device().str() +
                                       " tensors are not served by this backend (CPU and "
                                       "CUDA tensors are)");
  }
}

Buffer bufferOf(const at::Tensor& tensor, const std::string& what) {
  if (!tensor.is_contiguous()) {
    throw Error(braidInvalidArgument, "braid: " + what + " must be contiguous");
  }
  checkDevice(tensor);
  at::Tensor t = tensor.is_complex() ? at::view_as_real(tensor) : tensor;
  Buffer b;
  if (!braidType(t.scalar_type(), &b.dtype)) {
    throw TypeError("braid: no Braid datatype for " + torchName(t.scalar_type()) + " (" + what +
                    ")");
  }
  b.ptr = t.data_ptr();
  b.count = static_cast<size_t>(t.numel());
  return b;
}

const at::Tensor& one(const std::vector<at::Tensor>& tensors, const char* what) {
  if (tensors.size() != 1) {
    throw Error(braidInvalidArgument, std::string("braid: ") + what +
                                          " takes one tensor per process, got " +
                                          std::to_string(tensors.size()));
  }
  return tensors[0];
}

Reduction reductionOf(const c10d::ReduceOp& op, const at::Tensor& t) {
  RedOpType kind = op.op_;
  Reduction r;
  switch (kind) {
    case RedOpType::SUM: r.op = braidSum; break;
    case RedOpType::PRODUCT: r.op = braidProd; break;
    case RedOpType::MAX: r.op = braidMax; break;
    case RedOpType::MIN: r.op = braidMin; break;
    case RedOpType::AVG: r.op = braidAvg; break;
    case RedOpType::PREMUL_SUM:
      r.isPremul = true;
      r.factor = premulFactor(op);
      break;
    default:
      throw Error(braidInvalidArgument, std::string("braid: reduction ") + opName(kind) +
                                            " is not supported (SUM, PRODUCT, MIN, MAX, AVG "
                                            "and PREMUL_SUM)");
  }
  if (t.is_complex() && kind != RedOpType::SUM && kind != RedOpType::AVG) {
    throw TypeError(std::string("braid: complex tensors reduce with SUM and AVG only, not ") +
                    opName(kind));
  }
  // bool travels as uint8: a sum would leave bytes other than 0 and 1.
  if (t.scalar_type() == at::kBool && kind != RedOpType::MAX && kind != RedOpType::MIN) {
    throw TypeError("braid: bool tensors reduce with MAX (or) and MIN (and) only");
  }
  return r;
}

at::Device deviceOf(const std::string& what, const std::vector<at::Tensor>& tensors) {
  at::Device device(at::kCPU);
  bool mixed = false;
  for (const at::Tensor& t : tensors) {
    if (!t.defined() || t.numel() == 0) {
      continue;
    }
    checkDevice(t);
    if (t.is_cuda()) {
      mixed = mixed || (device.is_cuda() && device != t.device());
      device = t.device();
    } else {
      mixed = mixed || device.is_cuda();
    }
  }
  if (mixed) {  // the message only: the common case builds no strings
    std::set<std::string> names;
    for (const at::Tensor& t : tensors) {
      if (t.defined() && t.numel() > 0) {
        names.insert(t.device().str());
      }
    }
    std::string list;
    for (const std::string& n : names) {
      list += (list.empty() ? "" : ", ") + n;
    }
    throw Error(braidInvalidArgument, "braid: " + what + ": tensors on " + list +
                                          "; the tensors of one call share a device");
  }
  return device;
}

std::vector<size_t> splitCounts(const at::Tensor& t, const std::vector<int64_t>& splits,
                                int size) {
  int64_t rows = t.dim() ? t.size(0) : 1;
  int64_t perRow = rows ? t.numel() / rows : 0;
  std::vector<size_t> counts;
  if (splits.empty()) {
    if (rows % size) {
      throw Error(braidInvalidArgument, "braid: all_to_all_single: " + std::to_string(rows) +
                                            " rows do not split evenly over " +
                                            std::to_string(size) + " ranks");
    }
    counts.assign(size, static_cast<size_t>(rows / size * perRow));
    return counts;
  }
  if (splits.size() != static_cast<size_t>(size)) {
    throw Error(braidInvalidArgument, "braid: all_to_all splits: " +
                                          std::to_string(splits.size()) + " values for " +
                                          std::to_string(size) + " ranks");
  }
  for (int64_t s : splits) {
    if (s < 0) {
      throw Error(braidInvalidArgument, "braid: all_to_all splits: a negative size");
    }
    counts.push_back(static_cast<size_t>(s * perRow));
  }
  return counts;
}

std::vector<size_t> displacements(const std::vector<size_t>& counts) {
  std::vector<size_t> out(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) {
    out[i] = out[i - 1] + counts[i - 1];
  }
  return out;
}

}  // namespace braid::torch_ext
