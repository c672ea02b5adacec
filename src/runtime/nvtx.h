// NVTX ranges around calls, named as NCCL names its own ("ncclAllReduce" in the "NCCL"
// domain), so Nsight Systems shows Braid's calls where NCCL users look for them. The NVTX
// library (libnvToolsExt.so.1, which loads the profiler's injection, e.g. Nsight's) is opened
// at run time, once: without it a range costs a load of one flag. Nothing builds against NVTX.
//
// Device calls always push a range; host calls only under BRAID_NVTX=1 (nvtxHostRanges()).
//
// Thread-safety: any thread.
#pragma once

#include "exec/call.h"

namespace braid {

// Whether host calls take ranges (BRAID_NVTX=1 and the library loaded).
bool nvtxHostRanges();

// A range from construction to destruction, named after `op` (nothing without NVTX).
class NvtxRange {
 public:
  explicit NvtxRange(const Call& op);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool pushed_ = false;
};

// NCCL's name of `op`'s function: "ncclAllReduce", "ncclSend", ...
const char* ncclRangeName(const Call& op);

}  // namespace braid
