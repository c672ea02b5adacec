// The emulated GPU's kernels (kernels.h): each a stream operation on the host's kernels,
// loaded lazily as CUDA's are, faulting where a GPU would.
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "exec/reduce.h"
#include "tests/gpu_emu/emulated_gpu.h"
#include "tests/gpu_emu/emulated_internal.h"

namespace braid::cuda {
namespace emu {
namespace {

// CUDA's lazy loading: the kernels this process has loaded (every one once loadKernels ran).
struct Loaded {
  std::mutex mu;
  std::set<std::string> kernels;
  bool all = false;
};
Loaded& loaded() {
  static auto* l = new Loaded;
  return *l;
}

// A kernel's first launch loads it, and waits for every stream first.
void loadAtFirstLaunch(const std::string& kernel) {
  Loaded& l = loaded();
  {
    std::lock_guard<std::mutex> lock(l.mu);
    if (l.all || !l.kernels.insert(kernel).second) return;
  }
  drainAll();
}
}  // namespace

void forgetLoadedKernels() {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  l.kernels.clear();
  l.all = false;
}

}  // namespace emu

Status loadKernels() {
  emu::Loaded& l = emu::loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  l.all = true;
  return Status::ok();
}

// A kernel that waits: as streamWaitValue64 (refused too while a test refuses waits), a
// kernel's fault instead of an error where the word is out of the GPU's reach.
Status launchWait(const void* word, uint64_t value, void* stream) {
  if (word == nullptr || reinterpret_cast<uintptr_t>(word) % 8 != 0) {
    return Status(braidInvalidArgument, "wait kernel: the word is NULL or not aligned");
  }
  if (emu::refusingStreamWaits()) return emu::emulated("the wait kernel refused (a test's fault)");
  emu::loadAtFirstLaunch("wait");
  std::string why = emu::unreachable("the wait kernel's word", word, 8);
  return emu::enqueue(stream, [why, at = emu::reach(word), value] {
    if (!why.empty()) return emu::fault(why);
    emu::waitAtLeast(at, value);
  });
}

Status launchBump(void* word, void* stream) {
  emu::loadAtFirstLaunch("bump");
  std::string why = emu::unreachable("the bump kernel's word", word, 8);
  return emu::enqueue(stream, [why, to = static_cast<std::atomic<uint64_t>*>(emu::reach(word))] {
    if (!why.empty()) return emu::fault(why);
    to->store(to->load() + 1);
  });
}

Status launchCopy(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  if (dst == nullptr || src == nullptr) {
    return Status(braidInvalidArgument, "copy kernel: a buffer is NULL");
  }
  emu::loadAtFirstLaunch("copy");
  std::string why = emu::unreachable("the copy kernel's source", src, bytes);
  if (why.empty()) why = emu::unreachable("the copy kernel's destination", dst, bytes);
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (why.empty() && d < s + bytes && s < d + bytes) why = "the copy kernel's buffers overlap";
  return emu::enqueue(stream, [=, to = emu::reach(dst), from = emu::reach(src)] {
    if (!why.empty()) return emu::fault(why);
    std::memcpy(to, from, bytes);
  });
}

Status launchReduce(void* dst, const void* const* srcs, int nsrcs, size_t count,
                    braidDataType_t datatype, braidRedOp_t op, int divisor, void* stream) {
  if (static_cast<int>(datatype) < 0 || datatype >= braidNumTypes || static_cast<int>(op) < 0 ||
      op >= braidNumOps || nsrcs < 1 || nsrcs > kMaxReduceInputs || divisor < 1) {
    return Status(braidInvalidArgument, "reduce kernel: bad datatype, op, inputs or divisor");
  }
  if (count == 0) return Status::ok();
  emu::loadAtFirstLaunch("reduce " + std::to_string(datatype) + " " + std::to_string(op));
  const size_t es = datatypeSize(datatype), bytes = count * es;
  std::vector<const void*> in(srcs, srcs + nsrcs);
  std::vector<const void*> reached;  // as the device reaches them
  for (const void* s : in) reached.push_back(emu::reach(s));
  std::string why = emu::unreachable("the reduce kernel's destination", dst, bytes);
  for (const void* s : in) {
    if (s == nullptr || reinterpret_cast<uintptr_t>(s) % es != 0) {
      return Status(braidInvalidArgument, "reduce kernel: a buffer is NULL or not aligned");
    }
    if (why.empty()) why = emu::unreachable("a reduce kernel's input", s, bytes);
    const auto d = reinterpret_cast<uintptr_t>(dst), a = reinterpret_cast<uintptr_t>(s);
    if (why.empty() && d != a && d < a + bytes && a < d + bytes) {
      why = "the reduce kernel's destination overlaps an input partially";
    }
  }
  return emu::enqueue(stream, [=, ins = std::move(reached), out = emu::reach(dst)] {
    if (!why.empty()) return emu::fault(why);
    // Pairwise on the host's kernels into a scratch copy, so dst may be any input.
    const ReduceKernels& k = reduceKernels(datatype, op);
    std::vector<char> acc(bytes);
    if (ins.size() == 1) k.finalize(acc.data(), ins[0], count, divisor);
    for (size_t i = 1; i < ins.size(); ++i) {
      const void* a = i == 1 ? ins[0] : acc.data();
      if (i + 1 == ins.size()) {
        k.reduceFinal(acc.data(), nullptr, a, ins[i], count, divisor);
      } else {
        k.reduce(acc.data(), a, ins[i], count);
      }
    }
    std::memcpy(out, acc.data(), bytes);
  });
}

Status launchScale(void* dst, const void* src, size_t count, braidDataType_t datatype,
                   const void* scalarDevice, const void* scalarValue, void* stream) {
  if (static_cast<int>(datatype) < 0 || datatype >= braidNumTypes ||
      (scalarDevice == nullptr) == (scalarValue == nullptr)) {
    return Status(braidInvalidArgument, "scale kernel: bad datatype, or not one scalar");
  }
  if (count == 0) return Status::ok();
  const size_t es = datatypeSize(datatype), bytes = count * es;
  if (src == nullptr || dst == nullptr || reinterpret_cast<uintptr_t>(src) % es != 0 ||
      reinterpret_cast<uintptr_t>(dst) % es != 0) {
    return Status(braidInvalidArgument, "scale kernel: a buffer is NULL or not aligned");
  }
  emu::loadAtFirstLaunch("scale " + std::to_string(datatype));
  std::string why = emu::unreachable("the scale kernel's source", src, bytes);
  if (why.empty()) why = emu::unreachable("the scale kernel's destination", dst, bytes);
  if (why.empty() && scalarDevice != nullptr) {
    why = emu::unreachable("the scale kernel's scalar", scalarDevice, es);
  }
  unsigned char value[8] = {};
  if (scalarValue != nullptr) std::memcpy(value, scalarValue, es);  // taken at the launch
  const auto d = reinterpret_cast<uintptr_t>(dst), a = reinterpret_cast<uintptr_t>(src);
  if (why.empty() && d != a && d < a + bytes && a < d + bytes) {
    why = "the scale kernel's destination overlaps its source partially";
  }
  return emu::enqueue(stream, [=, to = emu::reach(dst), from = emu::reach(src),
                               scalar = emu::reach(scalarDevice)]() mutable {
    if (!why.empty()) return emu::fault(why);
    if (scalar != nullptr) std::memcpy(value, scalar, es);  // read as it runs
    reduceKernels(datatype, braidSum).scale(to, from, count, value);
  });
}

}  // namespace braid::cuda
