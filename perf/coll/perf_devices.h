// Which CUDA device each rank of a perf run drives (-E 1), as nccl-tests lays them out:
// thread t of the node's process p drives -g ranks, rank g of them on device
// p * nThreads * nGpus + t * nGpus + g. A rank whose device does not exist is an error
// before any communicator is made, naming the machine's device count; --share_gpu 1 (-Q 1)
// puts every rank on device 0 instead (Braid runs several ranks on one GPU; NVIDIA's NCCL
// refuses). Header-only and pure, so unit tests check it without a device.
#pragma once

#include <string>

namespace braid::perf {

struct DeviceLayout {
  int localProc = 0;  // this process's place among the job's processes on its node
  int nThreads = 1;
  int nGpus = 1;
  bool share = false;  // --share_gpu 1
  // The device of this process's local rank `local` (thread local / nGpus, rank local % nGpus).
  int deviceOf(int local) const { return share ? 0 : localProc * nThreads * nGpus + local; }
};

// "" when every rank of this process has its device among `deviceCount`; else what to
// change, naming the first rank that has none.
inline std::string checkDevices(const DeviceLayout& l, int deviceCount) {
  const int perProc = l.nThreads * l.nGpus;
  if (deviceCount <= 0) return "-E 1: this machine has no CUDA device";
  for (int local = 0; local < perProc; ++local) {
    const int device = l.deviceOf(local);
    if (device < deviceCount) continue;
    return "-E 1: process " + std::to_string(l.localProc) + " of this node, thread " +
           std::to_string(local / l.nGpus) + ", rank " + std::to_string(local % l.nGpus) +
           " of the thread maps to CUDA device " + std::to_string(device) +
           " (process x -t x -g, as nccl-tests maps them), but this machine has " +
           std::to_string(deviceCount) + " CUDA device" + (deviceCount == 1 ? "" : "s") +
           ": run fewer ranks per node, or pass --share_gpu 1 (-Q 1) to put every rank on "
           "device 0";
  }
  return "";
}

}  // namespace braid::perf
