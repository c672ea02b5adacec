// NCCL's profiler plugins on the drop-in: NCCL_PROFILER_PLUGIN names a library (a path, or
// NAME for libnccl-profiler-NAME.so) that exports ncclProfiler_v6, _v5 or _v4, looked up
// newest first as NCCL does; "none" or unset loads nothing. Each communicator gets the
// plugin's context at its first call, and each call run now or at ncclGroupEnd reports, as
// NCCL does, a group event and inside it a collective or point-to-point event (with v5 and
// v6, the group-API and collective- or point-to-point-API events around them too), each with
// the fields Braid has: function, sequence number per function, buffers, count, root or peer,
// datatype; algorithm and protocol are "braid". A call's events stop once Braid returns it:
// when it has completed for host buffers on the NULL stream, once it is enqueued otherwise.
// The context is finalized when the communicator is destroyed or aborted.
//
// Thread-safety: as NCCL's calls (one thread per communicator at a time); the plugin is
// loaded once per process.
#pragma once

#include <cstddef>

#include "compat/nccl/call.h"

namespace braid::nccl {

// The events of `n` calls on comm from construction to destruction (nothing without a
// plugin, or when the plugin's activation mask asks for none of them).
class ProfiledCalls {
 public:
  ProfiledCalls(ncclComm* comm, braidComm_t inner, const Call* calls, size_t n, bool group);
  ~ProfiledCalls();
  ProfiledCalls(const ProfiledCalls&) = delete;
  ProfiledCalls& operator=(const ProfiledCalls&) = delete;

 private:
  void stop(void*& handle);
  static constexpr size_t kMaxEvents = 64;  // a larger group reports its first calls only
  void* plugin_ = nullptr;
  void* api_ = nullptr;    // group API event (v5+)
  void* group_ = nullptr;  // group event
  void* calls_[kMaxEvents] = {};
  void* callApis_[kMaxEvents] = {};
  size_t n_ = 0;
};

// Ends comm's plugin context (ncclCommDestroy, ncclCommAbort).
void finalizeProfiler(ncclComm* comm);

}  // namespace braid::nccl
