// Operations on the CUDA side: a call whose stream is a CUDA stream, or whose buffers live
// in device memory, runs on the device windows (runtime/device/device_windows.h), as copies on one
// rank, or staged through pinned host memory by the communicator's proxy
// (runtime/device/staged_proxy.h); each is enqueued on the stream and returns. In a build without
// CUDA, or on a machine without a device, nothing here takes a call and the host path is unchanged.
//
// The runtime's one interface to the device executors and their ordering (DeviceOrder,
// ranks as threads, the release reaper): the host path calls only these, and a library
// built without CUDA links no_device_calls.cc, which compiles none of that machinery.
#pragma once

#include <vector>

#include "braid/braid.h"
#include "core/status.h"
#include "exec/call.h"
#include "runtime/call_executor.h"
#include "runtime/communicator.h"
#include "select/device_choice.h"

namespace braid {

// Adds the device executors (runtime/call_executor.h) to `table`: the device windows, the
// lowered schedules they pick, the staged proxy and one rank's copies. None in a library
// built without CUDA.
void addDeviceExecutors(CallExecutors* table);

// For a stream that is neither NULL nor a live host stream: accepted when it is a CUDA
// stream of this process; otherwise the error names the stream argument and says why
// (no CUDA in this build, no device, or CUDA's answer).
Status checkCudaStream(braidStream_t stream);

// Whether `ops` issued on `stream` take the CUDA path: a CUDA stream, or a device buffer.
// One registry lookup and nothing else when there is no device.
bool usesCuda(const std::vector<Call>& ops, braidStream_t stream);

// A host call is being issued (ranks that are threads of one process count it before
// their staged calls wait for it, runtime/device/thread_peers.h). Nothing without a device.
void hostCallIssued(braidComm* comm, const std::vector<Call>& ops);

// Waits until the communicator's staged device calls (runtime/device/staged_proxy.h) have run their
// host collectives, so that a host collective issued now runs after them on every rank.
// Nothing when there are none. The caller does not hold comm->opMu.
void waitForStagedCalls(braidComm* comm);

// Runs `ops` ordered on `stream` (NULL: the legacy default stream, complete on return);
// device buffers with a host stream are invalid usage.
braidResult_t issueCudaOps(braidComm* comm, std::vector<Call> ops, braidStream_t stream);

// How the communicator's device windows (of `shape`) run the collective `op`: the device
// selector's choice (select/device_choice.h). INFO says which, each time a collective's
// choice changes. The caller holds comm->opMu.
Expected<DeviceChoice> chooseOnWindows(braidComm* comm, const DeviceShape& shape, const Call& op);

// What a device call of `c` with `rankBytes` per rank runs, for braidCommGetAlgorithm:
// true, with *out set, once the communicator's device calls run on its windows; false
// where the host selector's answer holds (no windows: the staged path runs the host
// collective). Any thread.
Expected<bool> deviceCallChoice(braidComm* comm, algo::Collective c, uint64_t rankBytes,
                                DeviceChoice* out);

// The communicator's device state at its life's ends: barriers another rank released
// raised as its asynchronous error (once the stream is synced); its enqueued window calls
// finished (braidCommFinalize); comm freed with its CUDA device current. Nothing more than
// the host's part for a communicator that made no device call.
void pollDeviceErrors(braidComm* comm);
Status flushDeviceCalls(braidComm* comm);
void deleteOnItsDevice(braidComm* comm);

}  // namespace braid
