// ThreadPeers: the staged calls (runtime/device/staged_proxy.h) of ranks that are threads of one
// process. Their streams share the CUDA context's hardware queues where they share a GPU
// (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default), and a queue runs its work in the order it
// was enqueued, whatever the stream (runtime/device/device_windows.h says more). A staged call's
// stream waits for the proxy's done word, which needs every peer's part of the host collective,
// which needs the peer's copies into pinned memory and its ready write: enqueued after
// this rank's wait, in the same queue, they would never run (the host collective's
// timeout would end it). So a staged call enqueues that wait only once every rank of this
// process that its host collective involves has issued its part: a staged call's ready
// write, a host call as it is issued. Then every wait comes after the writes that end it,
// in whichever queue, and every queue moves. Peers on other GPUs are counted too: a
// peer's part may wait, in turn, for a rank on this one, and other communicators' ranks
// may share both GPUs (the device windows order them alike; NCCL asks a thread that
// drives several GPUs to group their calls too). A thread that drives several ranks must
// group their calls (braidGroupEnd issues them side by side); outside a group the wait
// ends in braidTimeout, naming the fix.
//
// What is counted, per rank, in issue order: collectives (every rank takes part in each),
// and sends and receives per peer (matched in order per pair). The counts live in one
// object per communicator that its ranks in this process share, found by rank 0's
// listening address. Host calls count once the process has a device (no staged call
// before that). Thread-safe; each rank writes only its own counts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "exec/call.h"
#include "runtime/communicator.h"

struct braidComm;

namespace braid {

class ThreadPeers {
 public:
  // The communicator's, made at its first use; nullptr when no other rank is a thread of
  // this process (nothing to order).
  static ThreadPeers* of(braidComm* comm);
  ~ThreadPeers();
  // A host call's issued() (below), where the process has a device; nothing otherwise.
  static void hostCallIssued(braidComm* comm, const std::vector<Call>& ops);

  // Counts `ops` as issued by this rank: its part of their host collectives is in place
  // (a staged call's ready write is enqueued; a host call is being issued).
  void issued(const std::vector<Call>& ops);
  // After issued(ops): blocks until every rank of this process that `ops` involve has
  // issued its part of them, for at most the timeout (braidTimeout, naming the fix and
  // where the lagging rank's thread is), or until the communicator fails or aborts.
  Status awaitPeers(const std::vector<Call>& ops);

  // Where this rank's thread is, for a peer's timeout message: a stall names the place.
  enum Where : int { kOutside, kStaging, kAwaiting, kEnqueueing };
  void at(Where where);

  struct Shared;

 private:
  ThreadPeers() = default;
  braidComm* comm_ = nullptr;
  int rank_ = 0, nranks_ = 0;
  std::vector<int> threads_;  // the other ranks of this process
  std::vector<bool> isThread_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace braid
