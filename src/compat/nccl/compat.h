// The NCCL drop-in's shared pieces: the object behind ncclComm_t, the guard
// every entry point takes on it, error recording, and the mapping of NCCL's
// datatypes and reduction ops onto Braid's.
//
// The drop-in sees Braid only through include/braid/braid.h. An ncclComm wraps
// a braidComm_t and adds what NCCL has and Braid does not: non-blocking
// creation (ncclInProgress), windows, a CUDA device number.
//
// Thread-safety: as NCCL. Calls on one communicator come from one thread at a
// time, except ncclCommAbort, ncclCommGetAsyncError and ncclGetLastError,
// which may come from any thread (PyTorch's watchdog polls the last two).
#pragma once

#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid/braid.h"

namespace braid::nccl {

// A communicator being made on a thread of its own: a non-blocking init,
// split or shrink, or an init inside ncclGroupStart/End. The thread fills it
// in; the communicator adopts the result when it next looks.
struct Job {
  std::mutex mu;
  bool done = false;
  bool abandoned = false;  // the communicator was aborted first: free `made` on arrival
  braidComm_t made = nullptr;
  ncclResult_t result = ncclInProgress;
  std::string error;
};

// A premul-sum op (ncclRedOpCreatePreMulSum): Braid's op of the same value
// (braidRedOpCreatePreMulSum), and its datatype, so that a call is checked
// when it is made, also inside a group (which Braid sees only at its end).
struct PreMulOp {
  ncclRedOp_t handle;
  braidDataType_t datatype;
};

}  // namespace braid::nccl

// A registered window (ncclCommWindowRegister): a record of the buffer, also
// registered with Braid. Braid's collectives take any memory; symmetric
// windows are for NCCL's kernels.
struct ncclWindow_vidmem {
  ncclComm* comm;
  void* buff;
  size_t size;
  int flags;
  void* registration;  // braidCommRegister's handle
};

struct ncclComm {
  static constexpr uint32_t kMagic = 0x6e63636c;  // "nccl"
  uint32_t magic = kMagic;
  std::atomic<braidComm_t> inner{nullptr};  // NULL while a job is making it
  int device = 0;
  bool blocking = true;
  std::atomic<int> users{0};  // entry points (and jobs on its behalf) inside now
  std::atomic<int> busy{0};   // non-blocking splits/shrinks of this parent in flight
  std::atomic<bool> revoked{false};
  std::mutex mu;  // guards everything below
  std::shared_ptr<braid::nccl::Job> job;  // while being made
  ncclResult_t initError = ncclSuccess;   // how its making failed
  std::string lastError;
  std::vector<braid::nccl::PreMulOp> preMulOps;
  std::vector<ncclWindow_t> windows;  // freed with the communicator
  // NCCL_PROFILER_PLUGIN's context for this communicator (compat/nccl/profiler.h), made at
  // its first call; the plugin's activation mask (it may change it); sequence numbers per
  // function (NCCL numbers each collective function apart).
  bool profilerTried = false;
  void* profilerContext = nullptr;
  int profilerMask = 0;
  int profilerRank = 0;
  uint64_t profilerSeq[16] = {};
};

namespace braid::nccl {

// Live communicators. A handle that is not registered (never made, or
// destroyed) is an error, not a crash.
void registerComm(ncclComm* comm);
// Removes comm from the live set, so new calls on it are refused; false when
// it was not there (never made, or already gone). waitIdle then waits for the
// calls inside it to leave.
bool unregisterComm(ncclComm* comm);
void waitIdle(ncclComm* comm);

// Holds a live communicator for the length of one call. ok() is false (and
// result() the code, its message recorded) when `comm` is NULL or not live.
class CommGuard {
 public:
  CommGuard(ncclComm_t comm, const char* function);
  ~CommGuard();
  CommGuard(const CommGuard&) = delete;
  CommGuard& operator=(const CommGuard&) = delete;

  bool ok() const { return result_ == ncclSuccess; }
  ncclResult_t result() const { return result_; }
  ncclComm* comm() const { return comm_; }

  // The Braid communicator, once made and not busy; otherwise an error
  // (ncclInvalidArgument, as NCCL's "communicator is not ready") in *result.
  // A revoked communicator is refused (ncclInvalidUsage) unless allowRevoked.
  braidComm_t ready(ncclResult_t* result, bool allowRevoked = false) const;

 private:
  ncclComm* comm_ = nullptr;
  ncclResult_t result_ = ncclSuccess;
};

// Adopts a finished job's communicator (or error). Returns ncclInProgress
// while the job runs. Callable from any thread.
ncclResult_t adoptJob(ncclComm* comm);

// Runs `make` on a thread of its own, filling `job`; `parent` (may be NULL) is
// held busy and in use until it ends.
void startJob(const std::shared_ptr<Job>& job, ncclComm* parent,
              braidResult_t (*make)(void* state, braidComm_t* out), std::shared_ptr<void> state);
// Blocks until `job` is done.
void waitJob(Job& job);

// Errors. fail() records `message` as the last error of this thread (and of
// comm, when given) and returns code. fromBraid() maps a Braid result, taking
// Braid's message for this thread when it failed.
ncclResult_t fail(ncclComm* comm, ncclResult_t code, const std::string& message);
ncclResult_t fromBraid(ncclComm* comm, braidResult_t result);
ncclResult_t toNccl(braidResult_t result);

// NCCL's datatypes and ops on Braid's. On failure, returns the code (message
// recorded on comm).
ncclResult_t toBraidType(ncclComm* comm, ncclDataType_t datatype, braidDataType_t* out);
// A built-in op, or a live premul-sum op of comm made for `datatype`, maps to
// Braid's op of the same value.
ncclResult_t toBraidOp(ncclComm* comm, ncclRedOp_t op, braidDataType_t datatype,
                       braidRedOp_t* out);
// Bytes per element of a Braid datatype.
size_t elementSize(braidDataType_t datatype);

// The configuration a communicator is made with.
struct Settings {
  bool blocking = true;
};
// Checks config (size, magic, version and values) as NCCL does; NULL means
// the defaults (or `inherit` when given).
ncclResult_t parseConfig(const ncclConfig_t* config, const Settings* inherit, Settings* out);

// Frees the windows comm still holds (its Braid registrations go with the
// Braid communicator).
void freeWindows(ncclComm* comm);

// A new communicator wrapper, registered, around `inner` (may be NULL while a
// job makes it).
ncclComm* newComm(braidComm_t inner, int device, const Settings& settings);

// The CUDA device current on this thread when CUDA's runtime is already loaded
// in the process, else 0. Never loads CUDA.
int currentCudaDevice();
// For its life, `device` is current on this thread, as NCCL's calls run on their
// communicator's device whatever the caller's current one is (its single-thread,
// several-device example sets no device between calls); then the caller's is put back.
// Nothing where CUDA's runtime is not loaded or the device is already current.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int saved_ = -1;  // the caller's device, where another was made current
};
// Whether p is CUDA device memory (false when CUDA's runtime is not loaded).
bool isCudaDevicePointer(const void* p);
// Whether this process is a CUDA program with a device: its CUDA runtime is loaded and
// counts at least one (ncclMemAlloc then gives device memory, as NCCL's).
bool cudaProgramHasDevice();

// Log a line at INFO level (BRAID_DEBUG, else NCCL_DEBUG, says which levels print).
void logInfo(const std::string& line);

}  // namespace braid::nccl

// Defines pncclX as an alias of ncclX (NCCL exports both; profilers hook one).
#define BRAID_NCCL_ALIAS(name) \
  extern "C" __attribute__((alias(#name))) decltype(name) p##name;
