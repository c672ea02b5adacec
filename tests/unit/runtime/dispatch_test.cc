// The runtime's dispatch table (runtime/dispatch.h): every combination of what a call is
// on, checked against the rules as braid.h and the executors state them, written here as
// plain conditions rather than a table.
#include "runtime/dispatch.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace braid {
namespace {

// The rules, one by one: a capture cannot stage through the host (a host buffer, or a
// device call the windows do not run on 2+ ranks); one rank's device calls are copies on
// the stream; otherwise the windows of the call's memory run it where they can, and the
// host FIFO schedules or the staged proxy take the rest.
Executor expected(Memory m, Placement p, Windows w, Capture c) {
  const bool capturing = c == Capture::kCapturing;
  if (m == Memory::kHost) {
    if (capturing) return Executor::kRefused;
    return w == Windows::kRunIt ? Executor::kHostWindows : Executor::kHostFifo;
  }
  if (p == Placement::kOneRank) return Executor::kDeviceAlone;
  if (w == Windows::kRunIt) return Executor::kDeviceWindows;
  return capturing ? Executor::kRefused : Executor::kDeviceStaged;
}

TEST(Dispatch, EveryCombinationFollowsTheRules) {
  int combinations = 0;
  for (Memory m : {Memory::kHost, Memory::kDevice}) {
    for (Placement p : {Placement::kOneRank, Placement::kRanks}) {
      for (Windows w : {Windows::kRunIt, Windows::kDoNot}) {
        for (Capture c : {Capture::kNone, Capture::kCapturing}) {
          EXPECT_EQ(dispatch({m, p, w, c}), expected(m, p, w, c))
              << "memory " << int(m) << " placement " << int(p) << " windows " << int(w)
              << " capture " << int(c);
          ++combinations;
        }
      }
    }
  }
  EXPECT_EQ(combinations, 16);
}

TEST(Dispatch, TheCommonCallsGoWhereTheirExecutorsAre) {
  // A host all-reduce on one node of shm ranks whose windows run its algorithm.
  EXPECT_EQ(dispatch({Memory::kHost, Placement::kRanks, Windows::kRunIt, Capture::kNone}),
            Executor::kHostWindows);
  // Across nodes (no windows): the FIFO schedules.
  EXPECT_EQ(dispatch({Memory::kHost, Placement::kRanks, Windows::kDoNot, Capture::kNone}),
            Executor::kHostFifo);
  // A 1-rank host call runs its own schedule's local steps, as every host call without windows.
  EXPECT_EQ(dispatch({Memory::kHost, Placement::kOneRank, Windows::kDoNot, Capture::kNone}),
            Executor::kHostFifo);
  // A device all-reduce of 2 to 8 ranks, captured or not: the device windows.
  EXPECT_EQ(dispatch({Memory::kDevice, Placement::kRanks, Windows::kRunIt, Capture::kCapturing}),
            Executor::kDeviceWindows);
  // A collective the device windows do not run: staged, or refused inside a capture.
  EXPECT_EQ(dispatch({Memory::kDevice, Placement::kRanks, Windows::kDoNot, Capture::kNone}),
            Executor::kDeviceStaged);
  EXPECT_EQ(dispatch({Memory::kDevice, Placement::kRanks, Windows::kDoNot, Capture::kCapturing}),
            Executor::kRefused);
  // One rank on device memory: copies on the stream, whatever else holds.
  EXPECT_EQ(dispatch({Memory::kDevice, Placement::kOneRank, Windows::kDoNot, Capture::kCapturing}),
            Executor::kDeviceAlone);
}

TEST(Dispatch, EveryExecutorHasItsOwnName) {
  std::set<std::string> names;
  for (Executor e : {Executor::kHostWindows, Executor::kHostFifo, Executor::kDeviceAlone,
                     Executor::kDeviceWindows, Executor::kDeviceStaged, Executor::kRefused}) {
    names.insert(executorName(e));
  }
  EXPECT_EQ(names.size(), 6u);
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace braid
