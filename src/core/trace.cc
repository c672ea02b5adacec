#include "core/trace.h"

#include <algorithm>

namespace braid {
namespace {
constexpr size_t kMaxNames = 4096;
// BRAID_TRACE_EVENTS' documentation gives the ring's bytes per event.
static_assert(sizeof(TraceEvent) == 88, "update BRAID_TRACE_EVENTS' doc (core/env.cc)");
}  // namespace

TraceSink::TraceSink(size_t capacity) : capacity_(std::max<size_t>(capacity, 16)) {
  ring_.reserve(std::min<size_t>(capacity_, 4096));
}

void TraceSink::record(const TraceEvent& e) {
  std::lock_guard<std::mutex> lock(mu_);
  ++recorded_;
  if (ring_.size() < capacity_) {
    ring_.push_back(e);
    return;
  }
  ring_[next_] = e;
  next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
}

void TraceSink::beginCall(const TraceEvent& e) {
  std::lock_guard<std::mutex> lock(mu_);
  current_ = e;
  open_ = true;
}

void TraceSink::endCall(uint64_t endNs, bool ok) {
  TraceEvent e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) return;
    open_ = false;
    e = current_;
  }
  e.endNs = endNs;
  e.state = ok ? TraceEvent::State::kDone : TraceEvent::State::kFailed;
  record(e);
}

const char* TraceSink::intern(const std::string& s) {
  std::lock_guard<std::mutex> lock(mu_);
  // A program that names every marker apart ("step 1", "step 2", ...) keeps a bounded set.
  if (names_.size() >= kMaxNames && names_.count(s) == 0) return "marker";
  return names_.insert(s).first->c_str();
}

std::vector<TraceEvent> TraceSink::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TraceEvent> out;
  out.reserve(ring_.size() + 1);
  out.insert(out.end(), ring_.begin() + static_cast<std::ptrdiff_t>(next_), ring_.end());
  out.insert(out.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(next_));
  if (open_) {
    out.push_back(current_);
    out.back().state = TraceEvent::State::kInFlight;
  }
  return out;
}

uint64_t TraceSink::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recorded_ - ring_.size();
}

void TraceSink::setClock(const TraceClock& c) {
  std::lock_guard<std::mutex> lock(mu_);
  clock_ = c;
}

TraceClock TraceSink::clock() const {
  std::lock_guard<std::mutex> lock(mu_);
  return clock_;
}

}  // namespace braid
