// The parts of the ibverbs transport that need no RDMA device, kept apart so
// they can be unit-tested anywhere: which HCA ports BRAID_IB_HCA allows
// (NCCL's grammar), which GID a RoCE port uses, the clear-to-send FIFO
// through which a receiver tells its sender where to write each frame, and
// the memory-registration cache. None of this includes verbs.h.
//
// Thread-safety: hcaAllowed and chooseGidIndex are pure; a CtsFifo or MrCache
// belongs to one endpoint or transport and is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <vector>

#include "core/status.h"

namespace braid::transport::ibverbs {

// BRAID_IB_HCA / NCCL_IB_HCA: "mlx5_0:1,mlx5_1" (prefixes of device names,
// optionally with a port), "^mlx5_3" excludes, "=mlx5_0" matches names
// exactly. Empty allows every device and port. The same list grammar as
// BRAID_SOCKET_IFNAME, matched against "device" and "device:port".
bool hcaAllowed(const std::string& spec, const std::string& device, int port);

// The order to try devices in: the one named `preferred` (the NIC nearest the
// rank's GPU) first, then the others as listed; `preferred` is ignored when
// BRAID_IB_HCA (`spec`) is set, which decides alone. Indices into `devices`.
std::vector<int> hcaOrder(const std::vector<std::string>& devices, const std::string& preferred,
                          const std::string& spec);

enum class GidType { kIb, kRoceV1, kRoceV2 };

struct GidInfo {
  int index = 0;
  GidType type = GidType::kIb;
  uint8_t raw[16] = {};
};

// The GID index to use on a port: `forced` (BRAID_IB_GID_INDEX) when >= 0 and
// present; 0 on InfiniBand; on Ethernet (RoCE) RoCE v2 with an IPv4-mapped
// address, then RoCE v2 with a global IPv6 one, then RoCE v1 likewise. Zero
// and link-local GIDs are never picked automatically. -1 when none fits.
int chooseGidIndex(const std::vector<GidInfo>& gids, bool ethernet, int forced);

// One clear-to-send entry: where the sender may write frame seq - 1. The
// receiver RDMA-writes it into the sender's FIFO; seq is written last (it is
// the last field) and is frame + 1, so a zeroed entry is never valid.
struct CtsEntry {
  uint64_t addr;
  uint32_t rkey;
  uint32_t bytes;
  uint64_t seq;
};

// The sender's view of its FIFO of `n` entries (memory the receiver writes).
class CtsFifo {
 public:
  CtsFifo(volatile CtsEntry* entries, int n) : entries_(entries), n_(n) {}
  // The entry for the next frame once the receiver has posted it, else null.
  bool ready(CtsEntry* out) const;
  void consume() { ++next_; }
  uint64_t nextFrame() const { return next_; }
  // Where the receiver writes the entry for `frame` (index into the FIFO).
  static size_t indexFor(uint64_t frame, int n) { return static_cast<size_t>(frame % n); }
  static CtsEntry entryFor(uint64_t frame, uint64_t addr, uint32_t rkey, uint32_t bytes) {
    return CtsEntry{addr, rkey, bytes, frame + 1};
  }

 private:
  volatile CtsEntry* entries_;
  int n_;
  uint64_t next_ = 0;
};

// A registration: the page-aligned range it covers and its keys; `opaque`
// is the transport's handle (ibv_mr*).
struct MrHandle {
  uintptr_t base = 0;
  size_t len = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  void* opaque = nullptr;
};

// Registers page-aligned ranges once and hands them out again for any buffer
// they cover; keeps at most `capacity` registrations, dropping the least
// recently used one that nobody holds (get pins, release unpins).
class MrCache {
 public:
  using Register = std::function<Expected<MrHandle>(uintptr_t base, size_t len)>;
  using Deregister = std::function<void(const MrHandle&)>;
  MrCache(Register reg, Deregister dereg, size_t capacity, size_t pageBytes = 4096);
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  Expected<MrHandle> get(const void* addr, size_t len);
  void release(const MrHandle& mr);
  size_t size() const { return entries_.size(); }
  uint64_t hits() const { return hits_; }
  uint64_t registrations() const { return registrations_; }

 private:
  struct Entry {
    MrHandle mr;
    int pins = 0;
  };
  Register reg_;
  Deregister dereg_;
  size_t capacity_;
  size_t page_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t hits_ = 0;
  uint64_t registrations_ = 0;
};

}  // namespace braid::transport::ibverbs
