// Group calls into lanes by stream, for a group that spans communicators: calls on one
// stream must reach it in the same order on every rank, so they share a lane and run in
// order; every other lane (another stream, or each call on the NULL stream) may run on a
// thread of its own. Used by braidGroupEnd (runtime/issue.cc) and the NCCL drop-in's group end
// (compat/nccl/group.cc). Header-only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace braid {

// Indices 0..n-1 in lanes: those whose streamOf(i) is the same non-null stream together,
// in index order; lanes in order of their first index.
template <typename StreamOf>
std::vector<std::vector<size_t>> laneByStream(size_t n, StreamOf streamOf) {
  std::vector<std::vector<size_t>> lanes;
  for (size_t i = 0; i < n; ++i) {
    const auto stream = streamOf(i);
    auto lane = std::find_if(lanes.begin(), lanes.end(), [&](const std::vector<size_t>& l) {
      return stream != nullptr && streamOf(l.front()) == stream;
    });
    if (lane == lanes.end()) lane = lanes.insert(lanes.end(), std::vector<size_t>());
    lane->push_back(i);
  }
  return lanes;
}

}  // namespace braid
