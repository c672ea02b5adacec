// ProcessGroupBraid's calls beyond one tensor per collective: point-to-point (with the
// store-counted receive from any source), coalescing, coalesced collectives, sparse
// all-reduce, the monitored barrier and split. Each is the Python group's method
// (python/braid/_torch_p2p.py, _torch_extra.py) in C++, composed of Braid calls and the
// group's store.
#include <chrono>
#include <stdexcept>
#include <thread>

#include "braid_api.h"
#include "process_group_braid.h"

namespace braid::torch_ext {
namespace {

using c10d::OpType;
using Clock = std::chrono::steady_clock;

constexpr auto kPollMin = std::chrono::microseconds(200);
constexpr auto kPollMax = std::chrono::milliseconds(10);

// A contiguous tensor's memory as 1-D bytes (complex: its real pairs).
at::Tensor bytesOf(const at::Tensor& t) {
  at::Tensor real = t.is_complex() ? at::view_as_real(t) : t;
  return real.contiguous().reshape(-1).view(at::kByte);
}

// Runs calls one after another as one Braid group (their buffers are apart).
braidResult_t grouped(const std::vector<BraidWork::Call>& calls, braidComm_t c, braidStream_t s) {
  braidResult_t r = api().braidGroupStart();
  if (r != braidSuccess) {
    return r;
  }
  braidResult_t first = braidSuccess;
  for (const BraidWork::Call& call : calls) {
    braidResult_t one = call(c, s);
    first = first != braidSuccess ? first : one;
  }
  r = api().braidGroupEnd();
  return first != braidSuccess ? first : r;
}

#if BRAID_TORCH_2
// outputs then inputs, one output per input (the tensor-coalesced calls of torch 2.x).
std::vector<at::Tensor> pairedTensors(const std::vector<at::Tensor>& outputs,
                                      const std::vector<at::Tensor>& inputs, const char* what) {
  if (outputs.size() != inputs.size()) {
    throw Error(braidInvalidArgument, std::string("braid: ") + what + ": " +
                                          std::to_string(outputs.size()) + " outputs for " +
                                          std::to_string(inputs.size()) + " inputs");
  }
  std::vector<at::Tensor> all = outputs;
  all.insert(all.end(), inputs.begin(), inputs.end());
  return all;
}
#endif

}  // namespace

// ---- point to point -------------------------------------------------------------------------

std::string ProcessGroupBraid::sentKey(int dst, int src) const {
  return "braid_sent/" + std::to_string(dst) + "/" + std::to_string(src);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::send(std::vector<at::Tensor>& tensors,
                                                       int dstRank, int tag) {
  const at::Tensor& t = one(tensors, "send");
  Buffer b = bufferOf(t, "send tensor");
  checkPeer(dstRank, "send");
  if (countSends_) {
    store_->add(sentKey(dstRank, getRank()), 1);
  }
  OrderKey order{2, dstRank, tag};
  return launch(OpType::SEND, "send", deviceOf("send", {t}), tensors, {},
                [b, dstRank](braidComm_t c, braidStream_t s) {
                  return api().braidSend(b.ptr, b.count, b.dtype, dstRank, c, s);
                },
                nullptr, &order);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::recv(std::vector<at::Tensor>& tensors,
                                                       int srcRank, int tag) {
  const at::Tensor& t = one(tensors, "recv");
  Buffer b = bufferOf(t, "recv tensor");
  checkPeer(srcRank, "recv");
  OrderKey order{1, srcRank, tag};
  return launch(OpType::RECV, "recv", deviceOf("recv", {t}), tensors, {},
                [this, b, srcRank](braidComm_t c, braidStream_t s) {
                  ++taken_[srcRank];
                  return api().braidRecv(b.ptr, b.count, b.dtype, srcRank, c, s);
                },
                nullptr, &order);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                int /*tag*/) {
  if (!countSends_) {
    throw Error(braidInvalidUsage,
                "braid: recv from any source needs the senders to count their sends (unset "
                "BRAID_TORCH_ANY_SOURCE=0 on every rank)");
  }
  const at::Tensor& t = one(tensors, "recv");
  Buffer b = bufferOf(t, "recv tensor");
  auto source = std::make_shared<std::atomic<int>>(-1);
  // Not fusable: its source must be known before the receive is issued.
  return launch(OpType::RECVANYSOURCE, "recv from any source", deviceOf("recv", {t}), tensors,
                {},
                [this, b, source](braidComm_t c, braidStream_t s) {
                  int src = anySender();
                  source->store(src);
                  ++taken_[src];
                  return api().braidRecv(b.ptr, b.count, b.dtype, src, c, s);
                },
                nullptr, nullptr, &source);
}

int ProcessGroupBraid::anySender() {
  std::vector<int> peers;
  for (int r = 0; r < getSize(); ++r) {
    if (r != getRank()) {
      peers.push_back(r);
    }
  }
  if (peers.empty()) {
    throw Error(braidInvalidUsage, "braid: recv from any source in a group of one rank");
  }
  const bool bounded = timeout_.count() > 0;
  const auto deadline = Clock::now() + timeout_;
  std::chrono::microseconds pause = kPollMin;
  while (true) {
    for (size_t i = 0; i < peers.size(); ++i) {
      int src = peers[(nextAny_ + i) % peers.size()];
      if (store_->add(sentKey(getRank(), src), 0) > taken_[src]) {
        nextAny_ = static_cast<int>((nextAny_ + i + 1) % peers.size());
        return src;
      }
    }
    if (bounded && Clock::now() > deadline) {
      throw Error(braidTimeout, "braid: rank " + std::to_string(getRank()) +
                                    ": recv from any source: Timed out after " +
                                    std::to_string(timeout_.count()) +
                                    " ms (the group's timeout): no rank sent a message");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, kPollMax);
  }
}

// ---- coalescing -----------------------------------------------------------------------------

void ProcessGroupBraid::startCoalescing() {
  coalescing_ = true;
}

#if BRAID_TORCH_2
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::endCoalescing() {
  coalescing_ = false;
  // Runs after every call queued since startCoalescing: those run first, as one group.
  return launch(OpType::UNKNOWN, "coalesced calls", at::Device(at::kCPU), {}, {},
                [](braidComm_t, braidStream_t) { return braidSuccess; });
}
#else
void ProcessGroupBraid::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  coalescing_ = false;
  executor_->kick();
}
#endif

// ---- coalesced collectives ------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  if (tensors.empty()) {
    throw Error(braidInvalidArgument, "braid: all_reduce_coalesced needs at least one tensor");
  }
  Reduction red = reductionOf(opts.reduceOp, tensors[0]);
  for (const at::Tensor& t : tensors) {
    reductionOf(opts.reduceOp, t);
  }
  // One Braid call per dtype, over that dtype's tensors packed together.
  std::vector<std::pair<at::Tensor, std::vector<at::Tensor>>> packs;
  for (const at::Tensor& t : tensors) {
    at::Tensor real = t.is_complex() ? at::view_as_real(t) : t;
    auto it = std::find_if(packs.begin(), packs.end(), [&](const auto& p) {
      return p.second[0].scalar_type() == real.scalar_type();
    });
    if (it == packs.end()) {
      packs.push_back({at::Tensor(), {real}});
    } else {
      it->second.push_back(real);
    }
  }
  std::vector<BraidWork::Call> calls;
  std::vector<at::Tensor> keep;
  for (auto& [flat, group] : packs) {
    std::vector<at::Tensor> pieces;
    for (const at::Tensor& t : group) {
      pieces.push_back(t.reshape(-1));
    }
    flat = at::cat(pieces);
    Buffer b = bufferOf(flat, "all_reduce_coalesced tensors");
    keep.push_back(flat);
    calls.push_back([this, b, red](braidComm_t c, braidStream_t s) {
      return api().braidAllReduce(b.ptr, b.ptr, b.count, b.dtype, opFor(red, b.dtype, c), c, s);
    });
  }
  return launch(
      OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced",
      deviceOf("all_reduce_coalesced", tensors), tensors, keep,
      [calls](braidComm_t c, braidStream_t s) { return grouped(calls, c, s); },
      [packs]() {
        for (const auto& [flat, group] : packs) {
          int64_t at = 0;
          for (const at::Tensor& t : group) {
            at::Tensor dst = t;
            dst.copy_(flat.narrow(0, at, t.numel()).view(t.sizes()));
            at += t.numel();
          }
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  if (outputLists.size() != static_cast<size_t>(getSize())) {
    throw Error(braidInvalidArgument, "braid: all_gather_coalesced needs " +
                                          std::to_string(getSize()) + " output lists, got " +
                                          std::to_string(outputLists.size()));
  }
  for (size_t r = 0; r < outputLists.size(); ++r) {
    bool same = outputLists[r].size() == inputs.size();
    for (size_t i = 0; same && i < inputs.size(); ++i) {
      same = outputLists[r][i].scalar_type() == inputs[i].scalar_type() &&
             outputLists[r][i].numel() == inputs[i].numel();
    }
    if (!same) {
      throw Error(braidInvalidArgument, "braid: all_gather_coalesced: output list " +
                                            std::to_string(r) +
                                            " does not match the input list in dtypes and sizes");
    }
  }
  std::vector<at::Tensor> pieces;
  std::vector<int64_t> sizes;
  for (const at::Tensor& t : inputs) {
    checkDevice(t);
    pieces.push_back(bytesOf(t));
    sizes.push_back(pieces.back().numel());
  }
  at::Tensor send = pieces.empty() ? at::empty({0}, at::kByte) : at::cat(pieces);
  at::Tensor recv = at::empty({send.numel() * getSize()}, send.options());
  Buffer i = bufferOf(send, "all_gather_coalesced input");
  Buffer o = bufferOf(recv, "all_gather_coalesced output");
  std::vector<at::Tensor> flatOutputs;
  for (const auto& list : outputLists) {
    flatOutputs.insert(flatOutputs.end(), list.begin(), list.end());
  }
  auto lists = outputLists;
  int size = getSize();
  return launch(
      OpType::ALLGATHER_COALESCED, "all_gather_coalesced", deviceOf("all_gather", {send, recv}),
      flatOutputs, {send, recv},
      [i, o](braidComm_t c, braidStream_t s) {
        return api().braidAllGather(i.ptr, o.ptr, i.count, braidUint8, c, s);
      },
      [lists, recv, sizes, size]() mutable {
        at::Tensor rows = recv.view({size, -1});
        for (int r = 0; r < size; ++r) {
          int64_t at = 0;
          for (size_t k = 0; k < lists[r].size(); ++k) {
            at::Tensor& out = lists[r][k];
            at::Tensor chunk = rows[r].narrow(0, at, sizes[k]).clone();
            at::Tensor real = out.is_complex() ? at::view_as_real(out) : out;
            real.copy_(chunk.view(real.scalar_type()).view(real.sizes()));
            at += sizes[k];
          }
        }
      });
}

#if BRAID_TORCH_2
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  std::vector<at::Tensor> all = pairedTensors(outputs, inputs, "allgather_into_tensor_coalesced");
  std::vector<BraidWork::Call> calls;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Buffer o = bufferOf(outputs[k], "all_gather output");
    Buffer i = bufferOf(inputs[k], "all_gather input");
    checkSizes(outputs[k], inputs[k], o.count, i.count * getSize(),
               "allgather_into_tensor_coalesced");
    calls.push_back([o, i](braidComm_t c, braidStream_t s) {
      return api().braidAllGather(i.ptr, o.ptr, i.count, i.dtype, c, s);
    });
  }
  return launch(OpType::COALESCED, "allgather_into_tensor_coalesced",
                deviceOf("all_gather", all), outputs, inputs,
                [calls](braidComm_t c, braidStream_t s) { return grouped(calls, c, s); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  std::vector<at::Tensor> all = pairedTensors(outputs, inputs, "reduce_scatter_tensor_coalesced");
  std::vector<BraidWork::Call> calls;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Buffer o = bufferOf(outputs[k], "reduce_scatter output");
    Buffer i = bufferOf(inputs[k], "reduce_scatter input");
    checkSizes(outputs[k], inputs[k], i.count, o.count * getSize(),
               "reduce_scatter_tensor_coalesced");
    Reduction red = reductionOf(opts.reduceOp, inputs[k]);
    calls.push_back([this, o, i, red](braidComm_t c, braidStream_t s) {
      return api().braidReduceScatter(i.ptr, o.ptr, o.count, o.dtype, opFor(red, o.dtype, c), c,
                                      s);
    });
  }
  return launch(OpType::COALESCED, "reduce_scatter_tensor_coalesced",
                deviceOf("reduce_scatter", all), outputs, inputs,
                [calls](braidComm_t c, braidStream_t s) { return grouped(calls, c, s); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce_sparse(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  return sparseAllreduce(const_cast<at::Tensor&>(one(tensors, "all_reduce")), opts.reduceOp);
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupBraid::getBackendOptions() {
  return c10::make_intrusive<Options>("braid", timeout_);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupBraid::split(
    const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<Options>& opts) {
  // Every rank of this group calls split with the ranks of its own new group (ranks of
  // this group); disjoint groups differ in their lowest rank, which is their color.
  auto mine = std::find(ranks.begin(), ranks.end(), getRank());
  int color = mine == ranks.end() ? BRAID_SPLIT_NOCOLOR : *std::min_element(ranks.begin(), ranks.end());
  std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  if (timeout.count() > 0 && timeout.count() < INT32_MAX) {
    config.timeoutMs = static_cast<int>(timeout.count());
  }
  executor_->drain();  // braidCommSplit is a call on this communicator: in its order
  braidComm_t child = nullptr;
  braidResult_t r = api().braidCommSplit(comm_, color, getRank(), &child, &config);
  if (r != braidSuccess) {
    std::rethrow_exception(callError(r, comm_, "split_group"));
  }
  if (child == nullptr) {
    return nullptr;
  }
  int rank = 0, size = 0;
  (void)api().braidCommUserRank(child, &rank);
  (void)api().braidCommCount(child, &size);
  return c10::make_intrusive<ProcessGroupBraid>(child, store, rank, size, timeout);
}
#endif

// ---- sparse all-reduce ------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::sparseAllreduce(at::Tensor& t,
                                                                  const c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::SUM) {
    throw Error(braidInvalidArgument, "braid: sparse all_reduce sums only (as gloo)");
  }
  // gloo's way: every rank's coalesced indices and values are gathered, and their sum,
  // coalesced, replaces t's contents. Three all-gathers in the executor's thread.
  at::Tensor mine = t.coalesce().cpu();
  at::Tensor idx = mine._indices().t().contiguous();  // (nnz, sparse dims)
  at::Tensor vals = mine._values().contiguous();      // (nnz, dense dims...)
  auto result = std::make_shared<at::Tensor>();
  int size = getSize();
  auto gather = [size](const at::Tensor& local, int64_t rows, braidComm_t c,
                       at::Tensor* out) -> braidResult_t {
    std::vector<int64_t> shape = local.sizes().vec();
    shape[0] = rows;
    at::Tensor padded = at::zeros(shape, local.options());
    padded.narrow(0, 0, local.size(0)).copy_(local);
    shape.insert(shape.begin(), size);
    *out = at::empty(shape, local.options());
    Buffer p = bufferOf(padded, "sparse all_reduce");
    return api().braidAllGather(p.ptr, out->data_ptr(), p.count, p.dtype, c, nullptr);
  };
  at::IntArrayRef shapeRef = t.sizes();
  std::vector<int64_t> shape(shapeRef.begin(), shapeRef.end());
  auto call = [gather, idx, vals, result, shape, size](braidComm_t c,
                                                       braidStream_t) -> braidResult_t {
    at::Tensor counts, allIdx, allVals;
    at::Tensor count = at::full({1}, idx.size(0), at::kLong);
    braidResult_t r = gather(count, 1, c, &counts);
    if (r != braidSuccess) {
      return r;
    }
    int64_t rows = counts.max().item<int64_t>();
    if ((r = gather(idx, rows, c, &allIdx)) != braidSuccess ||
        (r = gather(vals, rows, c, &allVals)) != braidSuccess) {
      return r;
    }
    std::vector<at::Tensor> is, vs;
    for (int k = 0; k < size; ++k) {
      int64_t n = counts[k][0].item<int64_t>();
      is.push_back(allIdx[k].narrow(0, 0, n));
      vs.push_back(allVals[k].narrow(0, 0, n));
    }
    *result = at::sparse_coo_tensor(at::cat(is).t(), at::cat(vs), shape).coalesce();
    return braidSuccess;
  };
  auto work = c10::make_intrusive<BraidWork>(getRank(), OpType::ALLREDUCE, "sparse all_reduce",
                                             executor_, std::vector<at::Tensor>{t}, call,
                                             [t, result]() mutable { t.copy_(result->to(t.device())); });
  work->keep({idx, vals});
  executor_->submit(work);  // never fused: its gathers depend on each other
  return work;
}

// ---- monitored barrier ------------------------------------------------------------------------

void ProcessGroupBraid::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  // gloo's: rank 0 waits up to the timeout for every rank, names the first that did not
  // come (every one, with waitAllRanks) and releases the others, who fail if rank 0 does
  // not release them in time. Over the store: it reports a stuck rank even when the
  // communicator is stuck.
  std::chrono::milliseconds limit = opts.timeout;
  if (limit == c10d::kUnsetTimeout) {
    limit = timeout_.count() > 0 ? timeout_ : std::chrono::milliseconds(1800 * 1000);
  }
  const auto deadline = Clock::now() + limit;
  const std::string key = "braid_monitored/" + std::to_string(++monitoredSeq_) + "/";
  const std::string ms = std::to_string(limit.count());
  auto waitKey = [&](const std::string& k) {
    std::chrono::microseconds pause(500);
    while (store_->add(k, 0) <= 0) {
      if (Clock::now() >= deadline) {
        return false;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
    }
    return true;
  };
  if (getRank() != 0) {
    store_->add(key + std::to_string(getRank()), 1);
    if (!waitKey(key + "go")) {
      throw std::runtime_error("Rank " + std::to_string(getRank()) +
                               " successfully reached monitoredBarrier, but received errors "
                               "while waiting for send/recv from rank 0: no release within " +
                               ms + " ms");
    }
    return;
  }
  if (limit.count() <= 0) {
    throw std::runtime_error("Rank 0 timed out in monitoredBarrier after " + ms + " ms");
  }
  std::vector<int> missing;
  for (int r = 1; r < getSize(); ++r) {
    if (!waitKey(key + std::to_string(r))) {
      missing.push_back(r);
      if (!waitAllRanks) {
        break;
      }
    }
  }
  if (!missing.empty()) {
    std::string ranks;
    for (int r : missing) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    }
    throw std::runtime_error(std::string(missing.size() > 1 ? "Ranks " : "Rank ") + ranks +
                             " failed to pass monitoredBarrier in " + ms + " ms");
  }
  store_->add(key + "go", 1);
}

}  // namespace braid::torch_ext
