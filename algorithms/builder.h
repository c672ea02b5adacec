// Helpers every schedule generator needs: an empty schedule for a rank, and a
// Builder that appends copies, sends and receives cut into pieces of at most
// maxStepElems, grouped into batches between open() and close(). Header-only;
// no state beyond the Schedule being built.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "algorithms/schedule.h"

namespace braid::algo {

inline Schedule emptySchedule(const CollArgs& a) {
  Schedule s;
  s.rank = a.rank;
  s.nranks = a.nranks;
  s.count = a.count;
  return s;
}

// Appends steps for one schedule; a batch is the steps between open() and
// close(), each cut into pieces of at most maxStep elements.
class Builder {
 public:
  Builder(Schedule* s, const CollArgs& a)
      : s_(s), maxStep_(std::max<uint64_t>(1, a.maxStepElems)) {}

  void copy(BufRef src, uint64_t srcOff, BufRef dst, uint64_t dstOff, uint64_t count) {
    if (count == 0 || (src == dst && srcOff == dstOff)) return;
    s_->steps.push_back({OpKind::kCopy, src, dst, -1, -1, srcOff, dstOff, count});
  }
  void send(int peer, BufRef src, uint64_t off, uint64_t count) {
    for (uint64_t done = 0; done < count; done += maxStep_) {
      const uint64_t n = std::min(maxStep_, count - done);
      s_->steps.push_back({OpKind::kSend, src, BufRef::kNone, peer, -1, off + done, 0, n});
      s_->steps.back().batchWithNext = inBatch_;
    }
  }
  void recv(int peer, BufRef dst, uint64_t off, uint64_t count) {
    for (uint64_t done = 0; done < count; done += maxStep_) {
      const uint64_t n = std::min(maxStep_, count - done);
      s_->steps.push_back({OpKind::kRecv, BufRef::kNone, dst, -1, peer, 0, off + done, n});
      s_->steps.back().batchWithNext = inBatch_;
    }
  }
  void open() {
    inBatch_ = true;
    mark_ = s_->steps.size();
  }
  void close() {
    inBatch_ = false;
    if (s_->steps.size() > mark_) s_->steps.back().batchWithNext = false;
  }

 private:
  Schedule* s_;
  uint64_t maxStep_;
  bool inBatch_ = false;
  size_t mark_ = 0;
};

}  // namespace braid::algo
