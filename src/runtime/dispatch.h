// Which executor runs a call: one table over what is known before anything runs (the
// memory the call is on, the placement of the ranks, whether the windows of that memory
// run the call's algorithm, and whether the stream is capturing a CUDA graph).
//
//   memory  ranks  windows run it  capturing  executor
//   host    any    yes             no         host windows  (exec/host/shared_windows.h)
//   host    any    no              no         host FIFO     (exec/host/fifo_executor.h)
//   host    any    any             yes        refused: a replay cannot stage through the host
//   device  one    any             any        one-rank copies on the stream
//   device  2+     yes             any        device windows (runtime/device/device_windows.h; a
//                                             schedule the windows do not program runs lowered,
//                                             kDeviceLowered, their choice and not this table's)
//   device  2+     no              no         staged through pinned host memory
//                                             (runtime/device/staged_proxy.h)
//   device  2+     no              yes        refused: a replay cannot stage through the host
//
// "device" is the device path: a buffer in device memory, or a CUDA stream. Host calls ask
// it once per collective; device calls once per call of an issue. Pure: tested on its own.
#pragma once

#include <cstdint>

namespace braid {

enum class Memory : uint8_t { kHost, kDevice };
enum class Placement : uint8_t { kOneRank, kRanks };
enum class Windows : uint8_t { kRunIt, kDoNot };  // the windows of the call's memory
enum class Capture : uint8_t { kNone, kCapturing };

struct CallTraits {
  Memory memory = Memory::kHost;
  Placement placement = Placement::kRanks;
  Windows windows = Windows::kDoNot;
  Capture capture = Capture::kNone;
};

enum class Executor : uint8_t {
  kHostWindows,
  kHostFifo,
  kDeviceAlone,
  kDeviceWindows,
  kDeviceStaged,
  kDeviceLowered,  // never dispatch's answer: the device windows pick it per collective
  kRefused,        // a capture a replay could not run: refused before anything is enqueued
};

Executor dispatch(const CallTraits& call);
const char* executorName(Executor executor);

}  // namespace braid
