// The ranks of a perf run: see perf_world.h.
#include "perf/coll/perf_world.h"

#include <string>
#include <thread>

namespace braid::perf {
namespace {

std::string failure(const char* what, braidResult_t r, braidComm_t comm) {
  return std::string(what) + ": " + braidGetErrorString(r) + ": " + braidGetLastError(comm);
}

}  // namespace

PerfWorld::~PerfWorld() {
  for (braidComm_t c : comms_) {
    if (c != nullptr) (void)braidCommDestroy(c);
  }
  if (procComm_ != nullptr) (void)braidCommDestroy(procComm_);
}

bool PerfWorld::create(const DeviceLayout& devices, std::string* error) {
  layout_.nThreads = devices.nThreads;
  layout_.nGpus = devices.nGpus;
  layout_.devices = devices;
  braidComm_t comm = nullptr;
  braidResult_t r = braidCommInitFromEnv(&comm, nullptr);
  if (r != braidSuccess) {
    *error = failure("braidCommInitFromEnv", r, nullptr);
    return false;
  }
  (void)braidCommUserRank(comm, &layout_.proc);
  (void)braidCommCount(comm, &layout_.nProcs);
  comms_.assign(static_cast<size_t>(layout_.perProc()), nullptr);
  if (layout_.perProc() == 1) {
    comms_[0] = comm;
    return true;
  }
  procComm_ = comm;
  // Process 0 starts the rendezvous of the ranks; its id reaches the others
  // over the processes' communicator.
  if (layout_.proc == 0 && (r = braidGetUniqueId(&id_)) != braidSuccess) {
    *error = failure("braidGetUniqueId", r, nullptr);
    return false;
  }
  r = braidBroadcast(&id_, &id_, sizeof(id_), braidUint8, 0, procComm_, nullptr);
  if (r != braidSuccess) {
    *error = failure("broadcasting the unique id", r, procComm_);
    return false;
  }
  return true;
}

bool PerfWorld::initRanks(int first, int count, std::string* error) {
  if (layout_.perProc() == 1) return true;  // made by create()
  std::vector<braidResult_t> results(static_cast<size_t>(count), braidSuccess);
  auto init = [&](int k) {
    const int local = first + k;
    results[static_cast<size_t>(k)] = braidCommInitRank(
        &comms_[static_cast<size_t>(local)], layout_.nranks(), id_, layout_.rankOf(local));
  };
  std::vector<std::thread> others;
  for (int k = 1; k < count; ++k) others.emplace_back(init, k);
  init(0);
  for (std::thread& t : others) t.join();
  for (int k = 0; k < count; ++k) {
    if (results[static_cast<size_t>(k)] != braidSuccess) {
      *error = failure("braidCommInitRank", results[static_cast<size_t>(k)], nullptr) + " (rank " +
               std::to_string(layout_.rankOf(first + k)) + ")";
      return false;
    }
  }
  return true;
}

bool PerfWorld::destroy(std::string* error) {
  bool ok = true;
  std::vector<std::thread> finalizers;
  std::vector<braidResult_t> results(comms_.size(), braidSuccess);
  // Finalize waits for the peers' goodbyes: the ranks of this process finalize side by side.
  for (size_t i = 0; i < comms_.size(); ++i) {
    finalizers.emplace_back([&, i] {
      if (comms_[i] == nullptr) return;
      results[i] = braidCommFinalize(comms_[i]);
      if (results[i] == braidSuccess) results[i] = braidCommDestroy(comms_[i]);
      comms_[i] = nullptr;
    });
  }
  for (std::thread& t : finalizers) t.join();
  for (braidResult_t r : results) {
    if (r != braidSuccess && ok) {
      *error = failure("braidCommFinalize/Destroy", r, nullptr);
      ok = false;
    }
  }
  if (procComm_ != nullptr) {
    braidResult_t r = braidCommFinalize(procComm_);
    if (r == braidSuccess) r = braidCommDestroy(procComm_);
    procComm_ = nullptr;
    if (r != braidSuccess && ok) {
      *error = failure("braidCommFinalize/Destroy (processes)", r, nullptr);
      ok = false;
    }
  }
  return ok;
}

}  // namespace braid::perf
