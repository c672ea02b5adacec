// runtime/device_calls.h in a library built without CUDA: no call takes the device path
// (cuda::compiled() is false), so none of the device executors or their ordering is
// compiled in; a stream that is neither NULL nor Braid's is refused as it is there.
#include "runtime/device_calls.h"

namespace braid {

void addDeviceExecutors(CallExecutors* table) {}

Status checkCudaStream(braidStream_t stream) {
  return invalidArgument("stream is neither NULL nor a stream from braidStreamCreate");
}

bool usesCuda(const std::vector<Call>& ops, braidStream_t stream) { return false; }

void hostCallIssued(braidComm* comm, const std::vector<Call>& ops) {}

void waitForStagedCalls(braidComm* comm) {}

braidResult_t issueCudaOps(braidComm* comm, std::vector<Call> ops, braidStream_t stream) {
  return braidInternalError;  // unreachable: usesCuda is false
}

Expected<DeviceChoice> chooseOnWindows(braidComm* comm, const DeviceShape& shape, const Call& op) {
  return internalError("no device windows in a build without CUDA");
}

Expected<bool> deviceCallChoice(braidComm* comm, algo::Collective c, uint64_t rankBytes,
                                DeviceChoice* out) {
  return false;
}

void pollDeviceErrors(braidComm* comm) {}

Status flushDeviceCalls(braidComm* comm) { return Status::ok(); }

void deleteOnItsDevice(braidComm* comm) { delete comm; }

}  // namespace braid
