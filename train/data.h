// The training data: any text as bytes (vocabulary 256, no tokenizer). Batch k
// is a pure function of (seed, k): sequence j of step k starts at an offset
// drawn from mixPair(seed, k * globalBatch + j), so every layout sees the same
// global batch and slices it by data-parallel rank and micro-batch. Immutable
// after load; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::train {

class Corpus {
 public:
  // Reads `path`, or, when empty, every text file of the fortunes corpus
  // (/usr/share/games/fortunes, .dat index files skipped) in name order.
  // Returns "" or an error a user can act on.
  std::string load(const std::string& path, int seq);
  size_t size() const { return bytes_.size(); }
  const std::string& source() const { return source_; }

  // Sequences [first, first + count) of step `step`'s global batch:
  // tokens and next-byte targets, count * seq each.
  void batch(uint64_t seed, int step, int globalBatch, int first, int count, int seq,
             std::vector<int32_t>* tokens, std::vector<int32_t>* targets) const;

 private:
  std::vector<uint8_t> bytes_;
  std::string source_;
};

}  // namespace braid::train
