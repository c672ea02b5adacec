#include "process_group_braid.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "braid_api.h"

namespace braid::torch_ext {
namespace {

using c10d::OpType;

const char kUniqueIdKey[] = "braid_unique_id";

// The unique id as hex text: the store of torch 1.13 takes str in Python and would cut
// the raw bytes at their first zero; the Python group reads and writes the same text.
std::vector<uint8_t> toHex(const braidUniqueId& id) {
  static const char digits[] = "0123456789abcdef";
  std::vector<uint8_t> out;
  for (unsigned char b : id.internal) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

braidUniqueId fromHex(const std::vector<uint8_t>& text) {
  braidUniqueId id{};
  if (text.size() != 2 * sizeof(id.internal)) {
    throw Error(braidInvalidUsage, "braid: the group's store holds a unique id of " +
                                       std::to_string(text.size()) + " characters, not " +
                                       std::to_string(2 * sizeof(id.internal)));
  }
  auto nibble = [](uint8_t c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    id.internal[i] = static_cast<char>(nibble(text[2 * i]) << 4 | nibble(text[2 * i + 1]));
  }
  return id;
}

void check(braidResult_t r, braidComm_t comm, const std::string& what) {
  if (r != braidSuccess) {
    std::rethrow_exception(callError(r, comm, what));
  }
}

}  // namespace

ProcessGroupBraid::ProcessGroupBraid(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : BackendBase(rank, size), timeout_(timeout) {
  const Api& c = api();
  if (rank == 0) {
    braidUniqueId id;
    check(c.braidGetUniqueId(&id), nullptr, "braidGetUniqueId");
    store->set(kUniqueIdKey, toHex(id));
  }
  braidUniqueId id = fromHex(store->get(kUniqueIdKey));
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  if (timeout.count() > 0 && timeout.count() < INT32_MAX) {
    config.timeoutMs = static_cast<int>(timeout.count());
  }
  braidComm_t comm = nullptr;
  check(c.braidCommInitRankConfig(&comm, size, id, rank, &config), nullptr,
        "braidCommInitRankConfig");
  init(store, comm);
}

ProcessGroupBraid::ProcessGroupBraid(braidComm_t comm,
                                     const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : BackendBase(rank, size), timeout_(timeout) {
  init(store, comm);
}

void ProcessGroupBraid::init(const c10::intrusive_ptr<c10d::Store>& store, braidComm_t comm) {
  comm_ = comm;
  store_ = store;
  const char* anySource = std::getenv("BRAID_TORCH_ANY_SOURCE");
  countSends_ = anySource == nullptr || std::string(anySource) != "0";
  taken_.assign(getSize(), 0);
  char name[64];
  std::snprintf(name, sizeof(name), "torch-pg-%p", static_cast<void*>(this));
  executor_ = std::make_shared<Executor>(comm, name);
}

ProcessGroupBraid::~ProcessGroupBraid() {
  shutdown();
}

const char* ProcessGroupBraid::implementation() {
  return "native";
}

void ProcessGroupBraid::shutdown() {
  if (executor_ == nullptr) {
    return;
  }
  executor_->close();  // runs what is queued; idempotent
  braidComm_t comm = comm_;
  comm_ = nullptr;  // a second shutdown, or one after abort(), frees nothing
  if (comm != nullptr) {
    for (auto& [key, op] : premul_) {
      (void)api().braidRedOpDestroy(op, comm);
    }
    (void)api().braidCommDestroy(comm);
  }
  premul_.clear();
}

void ProcessGroupBraid::abort() {
  braidComm_t comm = comm_;
  if (comm == nullptr || executor_ == nullptr) {
    return;
  }
  comm_ = nullptr;
  // Abort first (any thread may): the call in flight returns with an error, then the
  // queued ones fail without reaching Braid.
  (void)api().braidCommAbort(comm);
  executor_->abandon("was aborted");
  premul_.clear();
}

// ---- launching ------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::launch(
    OpType type, const std::string& what, at::Device device, std::vector<at::Tensor> outputs,
    std::vector<at::Tensor> keep, BraidWork::Call call, BraidWork::After after,
    const OrderKey* order, std::shared_ptr<std::atomic<int>>* source) {
  seq_.fetch_add(1, std::memory_order_relaxed);
  if (device.is_cuda()) {
    return launchCuda(type, what, device, std::move(outputs), std::move(keep), std::move(call),
                      std::move(after));
  }
  auto work = c10::make_intrusive<BraidWork>(getRank(), type, what, executor_, std::move(outputs),
                                             std::move(call), std::move(after));
  work->keep(std::move(keep));
  if (source != nullptr) {
    work->setSource(*source);
  }
  if (order != nullptr) {
    work->setFusable(*order);
  } else if (coalescing_) {
    work->setFusable(OrderKey{});  // issued with the others at endCoalescing
  }
  executor_->submit(work);
  return work;
}

#ifndef BRAID_TORCH_CUDA
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::launchCuda(
    OpType, const std::string& what, at::Device, std::vector<at::Tensor>,
    std::vector<at::Tensor>, BraidWork::Call, BraidWork::After) {
  throw Error(braidInvalidUsage, "braid: " + what +
                                     ": CUDA tensors, but the native backend was built against "
                                     "a torch without CUDA headers; use BRAID_TORCH_IMPL=python");
}
#endif

braidRedOp_t ProcessGroupBraid::opFor(const Reduction& r, braidDataType_t dtype,
                                      braidComm_t comm) {
  if (!r.isPremul) {
    return r.op;
  }
  auto key = std::make_pair(r.factor, static_cast<int>(dtype));
  auto it = premul_.find(key);
  if (it != premul_.end()) {
    return it->second;
  }
  // The factor as one element of the call's datatype (float8 aside, torch's own types).
  static const std::map<int, at::ScalarType> kTypes = {
      {braidInt8, at::kChar},       {braidUint8, at::kByte},   {braidInt32, at::kInt},
      {braidInt64, at::kLong},      {braidFloat16, at::kHalf}, {braidFloat32, at::kFloat},
      {braidFloat64, at::kDouble},  {braidBfloat16, at::kBFloat16}};
  at::Tensor scalar = at::scalar_tensor(r.factor, at::TensorOptions().dtype(kTypes.at(dtype)));
  braidRedOp_t op;
  braidResult_t res = api().braidRedOpCreatePreMulSum(&op, scalar.data_ptr(), dtype,
                                                      braidScalarHostImmediate, comm);
  if (res != braidSuccess) {
    throw Error(res, "braid: PREMUL_SUM: " + lastError(comm, res));
  }
  premul_.emplace(key, op);
  return op;
}

void ProcessGroupBraid::checkPeer(int peer, const char* what) const {
  if (peer < 0 || peer >= getSize()) {
    throw Error(braidInvalidArgument, std::string("braid: ") + what + ": peer " +
                                          std::to_string(peer) + " is not a rank of this group of " +
                                          std::to_string(getSize()));
  }
}

void ProcessGroupBraid::checkSizes(const at::Tensor& output, const at::Tensor& input,
                                   size_t have, size_t need, const char* what) const {
  if (output.scalar_type() != input.scalar_type()) {
    throw TypeError(std::string("braid: ") + what + ": output is " +
                    c10::toString(output.scalar_type()) + ", input " +
                    c10::toString(input.scalar_type()));
  }
  if (have != need) {
    throw Error(braidInvalidArgument, std::string("braid: ") + what + ": " +
                                          std::to_string(have) + " elements where " +
                                          std::to_string(need) + " are needed (" +
                                          std::to_string(getSize()) + " ranks)");
  }
}

// ---- collectives ----------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  at::Tensor& t = const_cast<at::Tensor&>(one(tensors, "all_reduce"));
  if (t.is_sparse()) {
    return sparseAllreduce(t, opts.reduceOp);
  }
  Reduction red = reductionOf(opts.reduceOp, t);
  Buffer b = bufferOf(t, "all_reduce tensor");
  return launch(OpType::ALLREDUCE, "all_reduce", deviceOf("all_reduce", {t}), tensors, {},
                [this, b, red](braidComm_t c, braidStream_t s) {
                  return api().braidAllReduce(b.ptr, b.ptr, b.count, b.dtype,
                                              opFor(red, b.dtype, c), c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = one(tensors, "broadcast");
  Buffer b = bufferOf(t, "broadcast tensor");
  int root = static_cast<int>(opts.rootRank);
  return launch(OpType::BROADCAST, "broadcast", deviceOf("broadcast", {t}), tensors, {},
                [b, root](braidComm_t c, braidStream_t s) {
                  return api().braidBroadcast(b.ptr, b.ptr, b.count, b.dtype, root, c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  const at::Tensor& t = one(tensors, "reduce");
  Reduction red = reductionOf(opts.reduceOp, t);
  Buffer b = bufferOf(t, "reduce tensor");
  int root = static_cast<int>(opts.rootRank);
  return launch(OpType::REDUCE, "reduce", deviceOf("reduce", {t}), tensors, {},
                [this, b, red, root](braidComm_t c, braidStream_t s) {
                  return api().braidReduce(b.ptr, b.ptr, b.count, b.dtype,
                                           opFor(red, b.dtype, c), root, c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) {
  Buffer o = bufferOf(output, "all_gather output");
  Buffer i = bufferOf(input, "all_gather input");
  checkSizes(output, input, o.count, i.count * getSize(), "all_gather_into_tensor");
  return launch(OpType::_ALLGATHER_BASE, "all_gather", deviceOf("all_gather", {output, input}),
                {output}, {input}, [o, i](braidComm_t c, braidStream_t s) {
                  return api().braidAllGather(i.ptr, o.ptr, i.count, i.dtype, c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const at::Tensor& t = one(inputs, "all_gather");
  if (outputLists.size() != 1) {
    throw Error(braidInvalidArgument, "braid: all_gather takes one tensor list per process");
  }
  std::vector<at::Tensor> outputs = outputLists[0];
  if (outputs.size() != static_cast<size_t>(getSize())) {
    throw Error(braidInvalidArgument,
                "braid: all_gather needs " + std::to_string(getSize()) + " output tensors");
  }
  Buffer i = bufferOf(t, "all_gather input");
  std::vector<at::Tensor> all = outputs;
  all.push_back(t);
  at::Tensor flat = at::empty({getSize(), t.numel()}, t.options());
  Buffer f = bufferOf(flat, "all_gather output");
  return launch(
      OpType::ALLGATHER, "all_gather", deviceOf("all_gather", all), outputs, {t, flat},
      [i, f](braidComm_t c, braidStream_t s) {
        return api().braidAllGather(i.ptr, f.ptr, i.count, i.dtype, c, s);
      },
      [outputs, flat]() mutable {
        for (size_t r = 0; r < outputs.size(); ++r) {
          outputs[r].copy_(flat[r].view_as(outputs[r]));
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::gather(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const at::Tensor& t = one(inputs, "gather");
  int root = static_cast<int>(opts.rootRank);
  Buffer i = bufferOf(t, "gather input");
  std::vector<at::Tensor> outputs;
  if (getRank() == root) {
    if (outputLists.size() != 1) {
      throw Error(braidInvalidArgument, "braid: gather takes one tensor list per process");
    }
    outputs = outputLists[0];
  }
  at::Tensor flat = outputs.empty() ? at::empty({0}, t.options())
                                    : at::empty({getSize(), t.numel()}, t.options());
  void* po = outputs.empty() ? nullptr : flat.data_ptr();
  std::vector<at::Tensor> all = outputs;
  all.push_back(t);
  return launch(
      OpType::GATHER, "gather", deviceOf("gather", all), outputs, {t, flat},
      [i, po, root](braidComm_t c, braidStream_t s) {
        return api().braidGather(i.ptr, po, i.count, i.dtype, root, c, s);
      },
      [outputs, flat]() mutable {
        for (size_t r = 0; r < outputs.size(); ++r) {
          outputs[r].copy_(flat[r].view_as(outputs[r]));
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputLists,
    const c10d::ScatterOptions& opts) {
  const at::Tensor& t = one(outputs, "scatter");
  int root = static_cast<int>(opts.rootRank);
  Buffer o = bufferOf(t, "scatter output");
  std::vector<at::Tensor> all{t};
  at::Tensor flat = at::empty({0}, t.options());
  if (getRank() == root) {
    if (inputLists.size() != 1) {
      throw Error(braidInvalidArgument, "braid: scatter takes one tensor list per process");
    }
    std::vector<at::Tensor> rows;
    for (const at::Tensor& in : inputLists[0]) {
      rows.push_back(in.reshape(-1));
      all.push_back(in);
    }
    flat = at::stack(rows);
  }
  void* pi = getRank() == root ? flat.data_ptr() : nullptr;
  return launch(OpType::SCATTER, "scatter", deviceOf("scatter", all), outputs, {flat},
                [o, pi, root](braidComm_t c, braidStream_t s) {
                  return api().braidScatter(pi, o.ptr, o.count, o.dtype, root, c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  Buffer o = bufferOf(output, "reduce_scatter output");
  Buffer i = bufferOf(input, "reduce_scatter input");
  checkSizes(output, input, i.count, o.count * getSize(), "reduce_scatter_tensor");
  Reduction red = reductionOf(opts.reduceOp, input);
  return launch(OpType::_REDUCE_SCATTER_BASE, "reduce_scatter",
                deviceOf("reduce_scatter", {output, input}), {output}, {input},
                [this, o, i, red](braidComm_t c, braidStream_t s) {
                  return api().braidReduceScatter(i.ptr, o.ptr, o.count, o.dtype,
                                                  opFor(red, o.dtype, c), c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputLists,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& output = one(outputs, "reduce_scatter");
  if (inputLists.size() != 1 || inputLists[0].size() != static_cast<size_t>(getSize())) {
    throw Error(braidInvalidArgument,
                "braid: reduce_scatter needs " + std::to_string(getSize()) + " input tensors");
  }
  std::vector<at::Tensor> rows;
  for (const at::Tensor& in : inputLists[0]) {
    rows.push_back(in.reshape(-1));
  }
  at::Tensor flat = at::stack(rows);
  Buffer o = bufferOf(output, "reduce_scatter output");
  checkSizes(output, flat, flat.numel(), o.count * getSize(), "reduce_scatter");
  Buffer i = bufferOf(flat, "reduce_scatter input");
  Reduction red = reductionOf(opts.reduceOp, flat);
  return launch(OpType::REDUCE_SCATTER, "reduce_scatter",
                deviceOf("reduce_scatter", {output, flat}), outputs, {flat},
                [this, o, i, red](braidComm_t c, braidStream_t s) {
                  return api().braidReduceScatter(i.ptr, o.ptr, o.count, o.dtype,
                                                  opFor(red, o.dtype, c), c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
    std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions&) {
  Buffer o = bufferOf(output, "all_to_all output");
  Buffer i = bufferOf(input, "all_to_all input");
  at::Device device = deviceOf("all_to_all", {output, input});
  if (outputSplits.empty() && inputSplits.empty()) {
    checkSizes(output, input, o.count, i.count, "all_to_all_single");
    if (i.count % getSize()) {
      throw Error(braidInvalidArgument, "braid: all_to_all_single needs a multiple of " +
                                            std::to_string(getSize()) + " elements, got " +
                                            std::to_string(i.count));
    }
    size_t count = i.count / getSize();
    return launch(OpType::ALLTOALL_BASE, "all_to_all", device, {output}, {input},
                  [o, i, count](braidComm_t c, braidStream_t s) {
                    return api().braidAlltoAll(i.ptr, o.ptr, count, i.dtype, c, s);
                  });
  }
  std::vector<size_t> sc = splitCounts(input, inputSplits, getSize());
  std::vector<size_t> rc = splitCounts(output, outputSplits, getSize());
  std::vector<size_t> sd = displacements(sc), rd = displacements(rc);
  return launch(OpType::ALLTOALL_BASE, "all_to_allv", device, {output}, {input},
                [o, i, sc, rc, sd, rd](braidComm_t c, braidStream_t s) {
                  return api().braidAlltoAllv(i.ptr, sc.data(), sd.data(), o.ptr, rc.data(),
                                              rd.data(), i.dtype, c, s);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions&) {
  std::vector<at::Tensor> flatIn;
  std::vector<size_t> sc, rc;
  int64_t total = 0;
  for (const at::Tensor& t : inputs) {
    flatIn.push_back(t.reshape(-1));
    sc.push_back(t.numel());
  }
  for (const at::Tensor& t : outputs) {
    rc.push_back(t.numel());
    total += t.numel();
  }
  if (sc.size() != static_cast<size_t>(getSize()) || rc.size() != sc.size()) {
    throw Error(braidInvalidArgument, "braid: all_to_all needs " + std::to_string(getSize()) +
                                          " input and output tensors");
  }
  at::Tensor send = at::cat(flatIn);
  at::Tensor recv = at::empty({total}, send.options());
  Buffer i = bufferOf(send, "all_to_all input");
  Buffer o = bufferOf(recv, "all_to_all output");
  std::vector<size_t> sd = displacements(sc), rd = displacements(rc);
  std::vector<at::Tensor> all = outputs;
  all.push_back(send);
  return launch(
      OpType::ALLTOALL, "all_to_allv", deviceOf("all_to_all", all), outputs, {send, recv},
      [o, i, sc, rc, sd, rd](braidComm_t c, braidStream_t s) {
        return api().braidAlltoAllv(i.ptr, sc.data(), sd.data(), o.ptr, rc.data(), rd.data(),
                                    i.dtype, c, s);
      },
      [outputs, recv, rd]() mutable {
        for (size_t p = 0; p < outputs.size(); ++p) {
          outputs[p].copy_(recv.narrow(0, rd[p], outputs[p].numel()).view_as(outputs[p]));
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::barrier(const c10d::BarrierOptions&) {
  return launch(OpType::BARRIER, "barrier", at::Device(at::kCPU), {}, {},
                [](braidComm_t c, braidStream_t s) { return api().braidBarrier(c, s); });
}

}  // namespace braid::torch_ext
