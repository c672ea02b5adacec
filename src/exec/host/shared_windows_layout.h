// The layout of a rank's shared window region (exec/host/shared_windows.h), which every rank of the
// node maps: a header page of flags and a ring of lines for rounds that fit one, then two
// halves, each an input and an output area of chunkBytes. Private to the NodeWindows sources; the region is
// only ever read by the same build, so the layout may change freely.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "exec/host/shared_windows.h"

namespace braid {
namespace windows {

inline constexpr uint32_t kWindowMagic = 0x42574e44;  // "BWND"
inline constexpr size_t kHeaderBytes = 4096;
inline constexpr size_t kNameBytes = 64;

// Rounds whose window data fits kLineBytes: the data rides in the line of its own
// round's flag, so a peer gets both in one transfer.
inline constexpr size_t kLineBytes = 56;
struct alignas(64) Line {
  std::atomic<uint64_t> epoch;
  char data[kLineBytes];
};

// Such rounds cycle through this many lines of the writer's header, so a writer waited
// for by nobody (a broadcast's root) runs up to this many calls ahead of the slowest
// peer before it waits (NodeWindows::beginRound): where ranks share a core, that many
// calls in its turn. broadcast_perf -b 8 at 4 ranks on 2 cores: 0.89 us per call here,
// as at 112 lines (1.42 us at 16).
inline constexpr uint64_t kLineDepth = 48;

}  // namespace windows

struct NodeWindows::ShareDesc {
  char name[windows::kNameBytes];  // "" : the data is in the window, or at `address`
  uint64_t regionBytes;
  uint64_t offset;
  uint64_t address;  // not 0: the data is at this address in the owner's private memory
};

struct NodeWindows::Header {
  uint32_t magic;
  int32_t rank;
  uint64_t chunkBytes;
  alignas(64) std::atomic<uint64_t> ready;
  alignas(64) std::atomic<uint64_t> done;
  alignas(64) std::atomic<uint64_t> finished;
  alignas(64) std::atomic<uint32_t> wakeSeq;
  std::atomic<uint32_t> sleepers;
  alignas(64) ShareDesc input[2];
  ShareDesc output[2];
  windows::Line lines[windows::kLineDepth];  // round e's line is lines[e % kLineDepth]
};

// The accessors the interpreter calls at every step, inline.
inline NodeWindows::Header* NodeWindows::header(int rank) const {
  return reinterpret_cast<Header*>(bases_[rank]);
}

inline char* NodeWindows::inputArea(int rank, int half) const {
  return bases_[rank] + windows::kHeaderBytes + static_cast<size_t>(half) * 2 * chunk_;
}

inline char* NodeWindows::outputArea(int rank, int half) const {
  return inputArea(rank, half) + chunk_;
}

inline char* NodeWindows::lineData(int rank, uint64_t epoch) const {
  return header(rank)->lines[epoch % windows::kLineDepth].data;
}

inline std::atomic<uint64_t>& NodeWindows::lineEpoch(int rank, uint64_t epoch) const {
  return header(rank)->lines[epoch % windows::kLineDepth].epoch;
}

}  // namespace braid
