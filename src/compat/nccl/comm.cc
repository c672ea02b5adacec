// Live ncclComm handles, the per-call guard, and communicators made on a
// thread of their own (non-blocking creation).
#include <chrono>
#include <thread>
#include <unordered_set>

#include "compat/nccl/compat.h"

namespace braid::nccl {
namespace {

std::mutex gRegistryMu;
std::unordered_set<const ncclComm*>& comms() {
  static auto* set = new std::unordered_set<const ncclComm*>();
  return *set;
}

}  // namespace

void registerComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  comms().insert(comm);
}

bool unregisterComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  return comms().erase(comm) != 0;
}

// The calls inside leave (after an abort, Braid's waits return within a slice).
void waitIdle(ncclComm* comm) {
  while (comm->users.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

CommGuard::CommGuard(ncclComm_t comm, const char* function) {
  if (comm == nullptr) {
    result_ = function == nullptr
                  ? ncclInvalidArgument
                  : fail(nullptr, ncclInvalidArgument, std::string(function) + ": comm is NULL");
    return;
  }
  {
    std::lock_guard<std::mutex> lock(gRegistryMu);
    if (comms().count(comm) != 0) {
      comm->users.fetch_add(1);
      comm_ = comm;
      return;
    }
  }
  result_ = function == nullptr
                ? ncclInvalidArgument
                : fail(nullptr, ncclInvalidArgument,
                       std::string(function) +
                           ": comm is not a live communicator (destroyed, aborted, or never made)");
}

CommGuard::~CommGuard() {
  if (comm_ != nullptr) comm_->users.fetch_sub(1);
}

braidComm_t CommGuard::ready(ncclResult_t* result, bool allowRevoked) const {
  braidComm_t inner = comm_->inner.load(std::memory_order_acquire);
  if (inner == nullptr) {
    ncclResult_t r = adoptJob(comm_);
    inner = comm_->inner.load(std::memory_order_acquire);
    if (r == ncclInProgress) {
      *result = fail(comm_, ncclInvalidArgument,
                     "communicator is not ready: its non-blocking creation is in progress "
                     "(poll ncclCommGetAsyncError until it returns ncclSuccess)");
      return nullptr;
    }
    if (inner == nullptr) {  // its creation failed; ncclGetLastError keeps why
      *result = r == ncclSuccess ? ncclInternalError : r;
      return nullptr;
    }
  }
  if (comm_->busy.load() > 0) {
    *result = fail(comm_, ncclInvalidArgument,
                   "communicator is not ready: a non-blocking ncclCommSplit/ncclCommShrink of it "
                   "is in progress (poll ncclCommGetAsyncError until it returns ncclSuccess)");
    return nullptr;
  }
  if (!allowRevoked && comm_->revoked.load()) {
    *result = fail(comm_, ncclInvalidUsage,
                   "communicator was revoked (ncclCommRevoke): only destroy, abort, split and "
                   "shrink remain");
    return nullptr;
  }
  *result = ncclSuccess;
  return inner;
}

ncclResult_t adoptJob(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->mu);
  if (!comm->job) return comm->initError;
  std::shared_ptr<Job> held = comm->job;  // outlives the reset below, and its lock
  Job& job = *held;
  std::lock_guard<std::mutex> jobLock(job.mu);
  if (!job.done) return ncclInProgress;
  ncclResult_t result = job.result;
  if (result != ncclSuccess) {
    comm->lastError = job.error;
    comm->initError = result;
  }
  comm->inner.store(job.made, std::memory_order_release);
  job.made = nullptr;
  comm->job.reset();
  return result;
}

void startJob(const std::shared_ptr<Job>& job, ncclComm* parent,
              braidResult_t (*make)(void* state, braidComm_t* out), std::shared_ptr<void> state) {
  if (parent != nullptr) {
    parent->users.fetch_add(1);
    parent->busy.fetch_add(1);
  }
  std::thread([job, parent, make, state = std::move(state)] {
    braidComm_t made = nullptr;
    braidResult_t r = make(state.get(), &made);
    std::string error = r == braidSuccess ? "" : braidGetLastError(nullptr);
    if (parent != nullptr && r != braidSuccess) {
      std::lock_guard<std::mutex> lock(parent->mu);
      parent->lastError = error;
    }
    // The parent is free before the job says it is done: ncclGroupEnd returns once every
    // job is, and the caller's next call on the parent must find it free (it did not, now
    // and then, when this came after).
    if (parent != nullptr) parent->busy.fetch_sub(1);
    {
      std::lock_guard<std::mutex> lock(job->mu);
      if (job->abandoned) {
        if (made != nullptr) (void)braidCommAbort(made);
        made = nullptr;
      }
      job->made = made;
      job->result = toNccl(r);
      job->error = error;
      job->done = true;
    }
    if (parent != nullptr) parent->users.fetch_sub(1);
  }).detach();
}

void waitJob(Job& job) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(job.mu);
      if (job.done) return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

ncclComm* newComm(braidComm_t inner, int device, const Settings& settings) {
  auto* comm = new ncclComm();
  comm->inner.store(inner);
  comm->device = device;
  comm->blocking = settings.blocking;
  registerComm(comm);
  return comm;
}

}  // namespace braid::nccl
