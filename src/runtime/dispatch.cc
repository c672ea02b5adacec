#include "runtime/dispatch.h"

namespace braid {
namespace {

// One row of the table in dispatch.h; kAny matches every value of its column.
constexpr uint8_t kAny = 0xff;
struct Row {
  uint8_t memory, placement, windows, capture;
  Executor executor;
};

constexpr uint8_t v(Memory m) { return static_cast<uint8_t>(m); }
constexpr uint8_t v(Placement p) { return static_cast<uint8_t>(p); }
constexpr uint8_t v(Windows w) { return static_cast<uint8_t>(w); }
constexpr uint8_t v(Capture c) { return static_cast<uint8_t>(c); }

// First match wins.
constexpr Row kTable[] = {
    {v(Memory::kHost), kAny, kAny, v(Capture::kCapturing), Executor::kRefused},
    {v(Memory::kHost), kAny, v(Windows::kRunIt), kAny, Executor::kHostWindows},
    {v(Memory::kHost), kAny, v(Windows::kDoNot), kAny, Executor::kHostFifo},
    {v(Memory::kDevice), v(Placement::kOneRank), kAny, kAny, Executor::kDeviceAlone},
    {v(Memory::kDevice), v(Placement::kRanks), v(Windows::kRunIt), kAny, Executor::kDeviceWindows},
    {v(Memory::kDevice), v(Placement::kRanks), v(Windows::kDoNot), v(Capture::kNone),
     Executor::kDeviceStaged},
    {v(Memory::kDevice), v(Placement::kRanks), v(Windows::kDoNot), v(Capture::kCapturing),
     Executor::kRefused},
};

constexpr bool matches(uint8_t cell, uint8_t value) { return cell == kAny || cell == value; }

}  // namespace

Executor dispatch(const CallTraits& call) {
  for (const Row& r : kTable) {
    if (matches(r.memory, v(call.memory)) && matches(r.placement, v(call.placement)) &&
        matches(r.windows, v(call.windows)) && matches(r.capture, v(call.capture))) {
      return r.executor;
    }
  }
  return Executor::kRefused;  // unreachable: the table covers every combination
}

const char* executorName(Executor executor) {
  switch (executor) {
    case Executor::kHostWindows:
      return "host windows";
    case Executor::kHostFifo:
      return "host FIFO";
    case Executor::kDeviceAlone:
      return "device one-rank copies";
    case Executor::kDeviceWindows:
      return "device windows";
    case Executor::kDeviceStaged:
      return "device staged";
    case Executor::kDeviceLowered:
      return "device lowered schedules";
    case Executor::kRefused:
      return "refused";
  }
  return "unknown";
}

}  // namespace braid
