#include "runtime/premul.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/cuda/device_call.h"
#include "exec/reduce.h"
#include "runtime/device_calls.h"

namespace braid {

size_t inputBytes(const Call& op, int rank, int nranks) {
  return regionsOf(op, rank, nranks).front().bytes;
}

void readHostScalar(const PreMulScale& s, size_t es, unsigned char* out) {
  std::memcpy(out, s.scalarPtr != nullptr ? s.scalarPtr : s.value, es);
}

Status resolveRedOp(braidComm* comm, braidRedOp_t op, braidDataType_t datatype,
                    braidRedOp_t* resolved, PreMulScale* scale) {
  const int o = static_cast<int>(op);
  if (o >= 0 && o < braidNumOps) {
    *resolved = op;
    return Status::ok();
  }
  std::lock_guard<std::mutex> lock(comm->preMulMu);
  for (const braidComm::PreMulOp& p : comm->preMulOps) {
    if (p.handle != op) continue;
    if (p.datatype != datatype) {
      return invalidArgument("op " + std::to_string(o) + " was made for " +
                             datatypeName(p.datatype) + " and is used with " +
                             datatypeName(datatype));
    }
    *resolved = braidSum;
    scale->on = true;
    std::memcpy(scale->value, p.value, sizeof(scale->value));
    scale->scalarPtr = p.scalarPtr;
    return Status::ok();
  }
  return invalidArgument("op " + std::to_string(o) + " is neither a braidRedOp_t (0.." +
                         std::to_string(braidNumOps - 1) +
                         ") nor a live op from braidRedOpCreatePreMulSum on this comm");
}

bool anyPreMul(const Call* ops, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].preMul.on) return true;
  }
  return false;
}

Status checkHostScalars(const std::vector<Call>& ops) {
  for (const Call& op : ops) {
    if (op.preMul.on && op.preMul.scalarPtr != nullptr && cuda::compiled() && cuda::hasDevice() &&
        cuda::isDeviceMemory(op.preMul.scalarPtr)) {
      return invalidUsage(
          "the premul-sum op's scalar is in device memory but this call runs on the host (host "
          "buffers, no CUDA stream); pass a cudaStream_t, or make the op with a host scalar");
    }
  }
  return Status::ok();
}

std::vector<Call> scaleOnHost(const Call* ops, size_t n, int rank, int nranks,
                                   std::vector<std::vector<char>>* copies) {
  std::vector<Call> out(ops, ops + n);
  size_t used = 0;
  for (Call& op : out) {
    if (!op.preMul.on) continue;
    const size_t es = datatypeSize(op.datatype), bytes = inputBytes(op, rank, nranks);
    unsigned char scalar[8];
    readHostScalar(op.preMul, es, scalar);
    if (copies->size() <= used) copies->emplace_back();
    std::vector<char>& copy = (*copies)[used++];
    if (copy.size() < std::max<size_t>(bytes, 16)) copy.resize(std::max<size_t>(bytes, 16));
    if (bytes != 0)
      reduceKernels(op.datatype, braidSum).scale(copy.data(), op.send, bytes / es, scalar);
    op.send = copy.data();
    op.preMul.on = false;
  }
  return out;
}

Status scaleInto(const Call& op, void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  if (!cuda::isDeviceMemory(src)) {  // host input on a CUDA stream: on the device first
    BRAID_TRY(cuda::copyAsync(dst, src, bytes, stream));
    src = dst;
  }
  const size_t es = datatypeSize(op.datatype);
  const PreMulScale& s = op.preMul;
  if (s.scalarPtr != nullptr && cuda::isDeviceMemory(s.scalarPtr)) {
    return cuda::launchScale(dst, src, bytes / es, op.datatype, s.scalarPtr, nullptr, stream);
  }
  unsigned char scalar[8];
  readHostScalar(s, es, scalar);
  return cuda::launchScale(dst, src, bytes / es, op.datatype, nullptr, scalar, stream);
}

Expected<braidRedOp_t> createPreMulOp(braidComm* comm, const void* scalar,
                                      braidDataType_t datatype, bool onDevice) {
  braidComm::PreMulOp p{};
  p.datatype = datatype;
  if (onDevice) {
    p.scalarPtr = scalar;
  } else {
    std::memcpy(p.value, scalar, datatypeSize(datatype));
  }
  // Handles are unique in the process, so another communicator's op is refused by name.
  static std::atomic<int> next{braidNumOps};
  int handle = next.load();
  do {
    if (handle == static_cast<int>(braidMaxRedOp)) {
      return invalidUsage(
          "this process has made every premul-sum op handle (braidMaxRedOp); none is left");
    }
  } while (!next.compare_exchange_weak(handle, handle + 1));
  p.handle = static_cast<braidRedOp_t>(handle);
  std::lock_guard<std::mutex> lock(comm->preMulMu);
  comm->preMulOps.push_back(p);
  return p.handle;
}

bool destroyPreMulOp(braidComm* comm, braidRedOp_t op) {
  std::lock_guard<std::mutex> lock(comm->preMulMu);
  auto it = std::find_if(comm->preMulOps.begin(), comm->preMulOps.end(),
                         [op](const braidComm::PreMulOp& p) { return p.handle == op; });
  if (it == comm->preMulOps.end()) return false;
  comm->preMulOps.erase(it);
  return true;
}

}  // namespace braid
