// ProcessGroupBraid: the torch.distributed backend "braid" in C++, over braid.h.
//
// One group is one Braid communicator; rank 0 draws its unique id and passes it through
// the group's store, so new_group needs nothing from ranks outside the group. On torch
// 1.13 the class is a c10d::ProcessGroup (torch takes it as the group); on torch 2.x a
// c10d::Backend serving CPU and CUDA tensors (torch's ProcessGroup wraps it). The methods
// and their semantics are the Python group's (python/braid/torch.py, docs/torch.md).
//
// CPU tensors: the call is queued on the group's Executor (work.h) and runs with Braid's
// NULL stream; Work and Future complete from C++. CUDA tensors (where torch has CUDA): the
// call is issued on torch's current stream of the tensors' device, behind the calls
// already queued, and its Work records an event that wait() makes the caller's stream
// wait for (cuda_order.cc).
//
// Thread-safety: as torch's ProcessGroups: calls from any thread, in the same order on
// every rank; abort() from any thread.
#pragma once

#include <atomic>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "braid/braid.h"
#include "tensor_args.h"
#include "torch_compat.h"
#include "work.h"

namespace braid::torch_ext {

class ProcessGroupBraid : public BackendBase {
 public:
  // Joins the group's communicator: rank 0 publishes a fresh unique id in the store.
  // timeout: the deadline of every wait of the group (Braid's timeoutMs).
  ProcessGroupBraid(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout);
  // Wraps a communicator made by braidCommSplit (owned from now on).
  ProcessGroupBraid(braidComm_t comm, const c10::intrusive_ptr<c10d::Store>& store, int rank,
                    int size, std::chrono::milliseconds timeout);
  ~ProcessGroupBraid() override;

  const std::string getBackendName() const override {
    return "braid";
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;

#if BRAID_TORCH_2
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                  const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  bool supportsCoalescing() const override {
    return true;
  }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  bool supportsSplitting() const override {
    return true;
  }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  c10::intrusive_ptr<Options> getBackendOptions() override;
  void abort() override;
  void shutdown() override;
#else
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;
  void abort();
  void shutdown();
#endif

  // Calls this group has launched, the same on every rank that made the same calls; torch
  // reads it to tell whether ranks agree. It starts at 0 on every rank, so there is
  // nothing to set.
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override {
    return seq_.load(std::memory_order_relaxed);
  }

  // The communicator's handle (for braid.Communicator-level tools; not owned by them).
  braidComm_t comm() const {
    return comm_;
  }
  std::chrono::milliseconds timeout() const {
    return timeout_;
  }
  // Which implementation this is, for `braid.torch`'s log line and tests.
  static const char* implementation();

 private:
  void init(const c10::intrusive_ptr<c10d::Store>& store, braidComm_t comm);

  // Queues a call (CPU tensors) or issues it on the current CUDA stream of `device`.
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, const std::string& what,
                                        at::Device device, std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keep, BraidWork::Call call,
                                        BraidWork::After after = nullptr,
                                        const OrderKey* order = nullptr,
                                        std::shared_ptr<std::atomic<int>>* source = nullptr);
  // Issues the call now on `device`'s current stream, behind the calls already queued;
  // its Work records an event there (cuda_order.cc).
  c10::intrusive_ptr<c10d::Work> launchCuda(c10d::OpType type, const std::string& what,
                                            at::Device device, std::vector<at::Tensor> outputs,
                                            std::vector<at::Tensor> keep, BraidWork::Call call,
                                            BraidWork::After after);
  // Braid's op for a reduction; premul-sum ops are made on first use (executor thread).
  braidRedOp_t opFor(const Reduction& r, braidDataType_t dtype, braidComm_t comm);
  void checkPeer(int peer, const char* what) const;
  void checkSizes(const at::Tensor& output, const at::Tensor& input, size_t have, size_t need,
                  const char* what) const;
  // Sparse all-reduce and the store-counted receive from any source (p2p_extra.cc).
  c10::intrusive_ptr<c10d::Work> sparseAllreduce(at::Tensor& t, const c10d::ReduceOp& op);
  int anySender();
  std::string sentKey(int dst, int src) const;

  braidComm_t comm_ = nullptr;
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<Executor> executor_;
  bool coalescing_ = false;
  bool countSends_ = true;  // BRAID_TORCH_ANY_SOURCE != 0: sends count themselves
  std::vector<int64_t> taken_;  // messages received from each rank (executor thread)
  int nextAny_ = 0;
  uint64_t monitoredSeq_ = 0;
  std::atomic<uint64_t> seq_{0};  // calls launched (getSequenceNumberForGroup)
  // (factor, dtype) -> op; used from the executor thread only (one call at a time).
  std::map<std::pair<double, int>, braidRedOp_t> premul_;
};

}  // namespace braid::torch_ext
