// The ranks of a perf run, laid out as nccl-tests lays them out: processes
// (from the launcher) x -t threads x -g ranks per thread, global rank
// (proc * nThreads + thread) * nGpus + g. With one rank per process the
// communicator comes straight from the launcher (braidCommInitFromEnv); with
// more, a communicator of the processes passes a unique id from process 0 to
// the others and every rank joins with braidCommInitRank.
//
// create() and destroy() run on the main thread; initRanks() may run on any
// (each -p 1 thread creates its own ranks' communicators).
#pragma once

#include <string>
#include <vector>

#include "braid/braid.h"
#include "perf/coll/perf_devices.h"

namespace braid::perf {

struct PerfLayout {
  int nProcs = 1;
  int proc = 0;
  int nThreads = 1;
  int nGpus = 1;
  DeviceLayout devices;  // with -E 1: each local rank's CUDA device
  int nranks() const { return nProcs * nThreads * nGpus; }
  int perProc() const { return nThreads * nGpus; }
  // The global rank of this process's local rank i (thread i / nGpus, rank i % nGpus).
  int rankOf(int i) const { return proc * perProc() + i; }
};

class PerfWorld {
 public:
  PerfWorld() = default;
  PerfWorld(const PerfWorld&) = delete;
  PerfWorld& operator=(const PerfWorld&) = delete;
  ~PerfWorld();

  // Joins the launcher's job and learns the layout (`devices`: where the ranks run, checked
  // by the caller); with one rank per process its communicator is made here. False with
  // *error set.
  bool create(const DeviceLayout& devices, std::string* error);
  // Creates the communicators of local ranks first..first+count-1, each on a
  // thread of its own (every rank's init waits for all the others). False
  // with *error set.
  bool initRanks(int first, int count, std::string* error);

  const PerfLayout& layout() const { return layout_; }
  braidComm_t comm(int local) const { return comms_[static_cast<size_t>(local)]; }
  // Destroys every communicator (after braidCommFinalize on each).
  bool destroy(std::string* error);

 private:
  PerfLayout layout_;
  braidComm_t procComm_ = nullptr;  // processes only: passes the unique id
  braidUniqueId id_{};
  std::vector<braidComm_t> comms_;  // per local rank
};

}  // namespace braid::perf
