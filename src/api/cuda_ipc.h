// DeviceWindows: the direct GPU path for ranks of one node (CUDA IPC).
//
// Each rank allocates one device window (BRAID_CUDA_WINDOW_BYTES, default 64 MiB) and
// every peer maps it with CUDA IPC, so device data never leaves the GPU(s): a call copies
// its input into its own window on the caller's stream, the ranks meet at a host barrier,
// and the reduction or copy kernels read the peers' windows where they lie and write the
// result straight into the receive buffer. All-reduce is one-shot (every rank reduces
// everything) or two-shot (each rank reduces a slice in its window, then every rank
// gathers the slices) from BRAID_CUDA_TWO_SHOT_BYTES with 3 or more ranks on different
// GPUs (ranks sharing one GPU stay one-shot unless that variable is set). Inputs larger
// than a window go in rounds.
//
// Ordering: CUDA work of the calling stream before the call is seen (the copy-in runs on
// it); the host waits for the stream before each barrier, so the call returns with the
// result written (it blocks, as the staged path does). Host barriers are Braid's own
// all-reduces over the node's transport, with their timeouts: a dead or stuck peer is an
// error, never a hang.
//
// Set-up is collective and happens at the first device call that can use the windows; if
// any rank cannot (no IPC, no peer access between the devices, no memory, more than 8
// ranks, ranks on several nodes, BRAID_CUDA_IPC=0), every rank keeps the staged path and
// INFO says why. Per call, the first barrier also agrees that every rank's receive buffer
// is device memory (kernels write it); otherwise that call is staged on every rank.
#pragma once

#include <memory>
#include <vector>

#include "api/ops.h"

namespace braid {

class DeviceWindows {
 public:
  // Whether the windows can run `op` at all (decided from what every rank passes alike:
  // the collective, its operation; never from this rank's buffers).
  static bool supports(const OpRequest& op, int nranks);
  // Collective over comm; the caller holds comm->opMu. Null: use the staged path.
  static std::unique_ptr<DeviceWindows> create(braidComm* comm);
  ~DeviceWindows();
  DeviceWindows(const DeviceWindows&) = delete;
  DeviceWindows& operator=(const DeviceWindows&) = delete;

  // Runs op over the windows on `stream`. *staged is set when the ranks agreed to stage
  // this call instead (nothing was written). The caller holds comm->opMu.
  Status run(braidComm* comm, const OpRequest& op, void* stream, bool* staged);

 private:
  DeviceWindows() = default;
  Status barrier(braidComm* comm, void* stream, uint8_t* agree = nullptr);
  Status meet(braidComm* comm, void* stream, bool firstRound, const void* recv, bool* staged);
  Status copyBlocksIn(const OpRequest& op, size_t off, size_t n, size_t chunk, void* stream);
  Status allReduce(braidComm* comm, const OpRequest& op, void* stream, bool* staged);
  Status reduceScatter(braidComm* comm, const OpRequest& op, void* stream, bool* staged);
  Status allGather(braidComm* comm, const OpRequest& op, void* stream, bool* staged);
  Status broadcast(braidComm* comm, const OpRequest& op, void* stream, bool* staged);
  Status allToAll(braidComm* comm, const OpRequest& op, void* stream, bool* staged);
  char* win(int rank) const { return windows_[static_cast<size_t>(rank)]; }

  int rank_ = 0;
  int nranks_ = 1;
  size_t bytes_ = 0;         // per window
  size_t twoShotBytes_ = 0;  // all-reduce from this size up is two-shot (3+ ranks)
  bool oneDevice_ = true;      // every rank's window is on the same GPU
  bool twoShotForced_ = false; // BRAID_CUDA_TWO_SHOT_BYTES set: two-shot on one GPU too
  void* own_ = nullptr;      // this rank's window
  std::vector<char*> windows_;  // every rank's window as this process maps it
};

}  // namespace braid
