// The process's shared allocations: regions peers on the node can map by name
// (braidMemAlloc's, and the pages under registered buffers), so a collective on
// them can skip its copy into the shared window (exec/host/shared_windows.h) and let peers
// read the user's buffer where it lies. The name stays linked while the
// allocation lives (peers open it on first use); braidMemFree (or
// braidCommDeregister) unlinks it and unmaps (puts private pages back).
// Thread-safe. Header-only.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/transport.h"

namespace braid {

struct SharedSpan {
  std::string name;      // the region's name, for SharedRegion opening
  size_t regionBytes = 0;
  size_t offset = 0;     // where the span starts in the region
};

class SharedAllocations {
 public:
  static SharedAllocations& instance() {
    static SharedAllocations* s = new SharedAllocations();  // outlives static destructors
    return *s;
  }

  void add(std::unique_ptr<SharedRegion> region) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto base = reinterpret_cast<uintptr_t>(region->base());
    regions_[base] = std::move(region);
  }

  // Unmaps and unlinks the allocation starting at `base`; false if none does.
  bool remove(const void* base) {
    std::lock_guard<std::mutex> lock(mu_);
    return regions_.erase(reinterpret_cast<uintptr_t>(base)) != 0;
  }

  // The region holding [p, p + bytes), if one holds all of it.
  bool find(const void* p, size_t bytes, SharedSpan* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (regions_.empty()) return false;
    const auto at = reinterpret_cast<uintptr_t>(p);
    auto it = regions_.upper_bound(at);
    if (it == regions_.begin()) return false;
    --it;
    const SharedRegion& r = *it->second;
    if (at + bytes > it->first + r.bytes()) return false;
    out->name = r.name();
    out->regionBytes = r.bytes();
    out->offset = at - it->first;
    return true;
  }

  // Whether any region shares a byte with [lo, hi).
  bool overlaps(uintptr_t lo, uintptr_t hi) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regions_.lower_bound(hi);
    if (it == regions_.begin()) return false;
    --it;  // the last region starting below hi
    return it->first + it->second->bytes() > lo;
  }

  bool empty() const {
    std::lock_guard<std::mutex> lock(mu_);
    return regions_.empty();
  }

  // pthread_atfork's three handlers (runtime/shared_memory.cc installs them with the first
  // registration): the list is locked across fork(), and the child lets go of
  // the regions under registered buffers (SharedRegion::privatizeInForkedChild).
  void lockForFork() { mu_.lock(); }
  void unlockInParent() { mu_.unlock(); }
  void privatizeInChild() {
    for (auto it = regions_.begin(); it != regions_.end();) {
      it = it->second->privatizeInForkedChild() ? regions_.erase(it) : std::next(it);
    }
    mu_.unlock();
  }

 private:
  mutable std::mutex mu_;
  std::map<uintptr_t, std::unique_ptr<SharedRegion>> regions_;
};

}  // namespace braid
