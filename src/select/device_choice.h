// How a collective on device memory runs on a communicator's device windows
// (runtime/device/device_windows.h): which algorithm, on which executor, in what rounds,
// chosen by the cost model over the ranks' GPU paths as the host path's Selector chooses
// over host paths.
//
// The windows run two kinds of program. Their own load/store programs: all-reduce
// one-shot (the model's `direct`) or two-shot (`two_shot`, 3+ ranks), and the `direct`
// program of every other collective, one barrier per round of a window's half. And any
// algorithm's schedule lowered to stream operations over the send slots (ring, tree,
// halving-doubling, ...). The model prices each with its closed form, plus what the
// windows add to it: a program larger than a half runs in rounds, each with its barriers;
// a lowered step larger than a slot waits once per slot's worth. Several nodes never
// reach here: their device calls are staged, and the host collective (hierarchical where
// the host selector says so) runs on pinned copies.
//
// Loaded algorithms (schedule files, select/user_choice.h) run lowered as the built-ins'
// schedules do: BRAID_ALGO naming one ("allreduce:my2d") runs it where it serves the call
// (else the error says why, as on the host), and where the model decides, one that serves
// the call competes with its program's walk over the same inputs, plus its slot waits. A
// program with window steps has no lowering: forced, it is refused; else it sits out.
//
// Overrides, as on the host: BRAID_ALGO naming an algorithm runs it lowered (a '^'
// exclusion leaves the rest to the model); BRAID_CUDA_TWO_SHOT_BYTES, when set, keeps
// all-reduce on the windows, two-shot from that size (3+ ranks). Without GPU figures (a
// rank placed on no GPU of the topology) and with ranks on several GPUs, the constant
// rule applies: one-shot, two-shot from 1 MiB at 3+ ranks. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/registry.h"
#include "core/status.h"
#include "select/select.h"
#include "select/user_choice.h"

namespace braid {

enum class DeviceExecutor { kWindows, kLowered };

// What the windows' set-up fixed, alike on every rank.
struct DeviceShape {
  int nranks = 2;
  bool oneDevice = false;     // every rank's window is on one GPU
  size_t halfBytes = 0;       // a window half: the most one round carries
  size_t slotBytes = 0;       // a send slot: the most one lowered step moves at once
  int64_t twoShotBytes = -1;  // BRAID_CUDA_TWO_SHOT_BYTES; -1: not set
};

struct DeviceChoice {
  algo::Algorithm algorithm = algo::Algorithm::kDirect;
  DeviceExecutor executor = DeviceExecutor::kWindows;
  uint64_t roundBytes = 0;         // windows: a round (the half); lowered: a slot
  uint64_t rounds = 1;             // windows: rounds; lowered: waits for slots
  double predictedUs = 0;          // 0 where nothing prices it (no GPU figures)
  const char* why = "cost model";  // or "BRAID_ALGO", "BRAID_CUDA_TWO_SHOT_BYTES", ...
  // A loaded algorithm, lowered (then `algorithm` means nothing); owned by the selector.
  const algo::AlgoFile* user = nullptr;
  const char* name() const {
    return user != nullptr ? user->name.c_str() : algo::algorithmName(algorithm);
  }
};

// The constant rule's two-shot threshold, where no figures price it.
constexpr uint64_t kDefaultTwoShotBytes = uint64_t{1} << 20;

// The choice for a call of `c` with `rankBytes` per rank (count x element size) on
// windows of `shape`. `selector`: the communicator's device selector (BRAID_ALGO's
// policy and the cost inputs over its GPU paths); `gpuFigures`: whether those inputs
// come from GPU places (else only its policy is used); `fit`: the call's mode, type, op
// and root where known, which a loaded algorithm must serve.
Expected<DeviceChoice> chooseDeviceCall(algo::Collective c, uint64_t rankBytes,
                                        const DeviceShape& shape, const Selector& selector,
                                        bool gpuFigures, const CallFit* fit = nullptr);

// "" where the device path can run `f`'s program for `nranks` ranks lowered; else why not.
std::string whyNotOnDevice(const algo::AlgoFile& f, int nranks);

// "tree lowered to stream operations, ... predicted 21.3 us (cost model)": for logs.
std::string describeDeviceChoice(const DeviceChoice& choice);
// The device's ranking for a call the model prices, "direct (windows) 7.2 us; two_shot
// (windows) 8.0 us; ...", for logs; "" where the model does not decide.
// Then each loaded algorithm of `c`, priced, or why it does not run the call.
std::string explainDeviceCall(algo::Collective c, uint64_t rankBytes, const DeviceShape& shape,
                              const Selector& selector, bool gpuFigures,
                              const CallFit* fit = nullptr);

}  // namespace braid
