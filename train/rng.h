// Deterministic random numbers for the training stack: every full weight and
// every batch is a pure function of (seed, name or step), never of the layout.
// Header-only, stateless helpers plus a tiny generator. Not thread-safe per
// instance (each user owns its Rng).
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace braid::train {

// SplitMix64's finaliser: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t mixPair(uint64_t a, uint64_t b) { return mix64(mix64(a) ^ (b + 0x632be59bd9b4e019ull)); }

// FNV-1a: parameter names become seeds.
inline uint64_t hashName(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    return mix64(state_);
  }
  // Uniform in (0, 1): never 0, so log() is safe.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  // Standard normal by Box-Muller; one draw per call keeps the sequence simple.
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace braid::train
