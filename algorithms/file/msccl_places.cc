// Places (algorithms/file/msccl_xml_internal.h): every chunk's place within its block, so
// that MSCCL's block-less scratch lands where Braid's chunks of its data's size lie.
#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/file/msccl_xml_internal.h"

namespace braid::algo::msccl {
namespace {

std::string clash(int64_t a, int64_t b, uint64_t chunks) {
  return "it moves data between places " + std::to_string(a) + " and " + std::to_string(b) +
         " of their blocks (Braid cuts every block into " + std::to_string(chunks) +
         " chunks, which differ in size by place where a count is not a multiple of " +
         std::to_string(chunks) + ")";
}

}  // namespace

int64_t Places::placeOf(int r, BufRef b, uint64_t chunk) {
  if (b != BufRef::kScratch) return static_cast<int64_t>(chunk % chunks_);
  std::vector<int64_t>& s = scratch_[r];
  if (chunk >= s.size()) s.resize(chunk + 1, -1);
  return s[chunk];
}

Expected<int64_t> Places::place(int r, const Step& s, int64_t message) {
  const bool src = needsSrc(s.op) && s.src != BufRef::kNone;
  const bool dst = needsDst(s.op) && s.dst != BufRef::kNone;
  int64_t p = message;
  for (const int64_t q : {src ? placeOf(r, s.src, s.srcOffset) : int64_t{-1},
                          dst ? placeOf(r, s.dst, s.dstOffset) : int64_t{-1}}) {
    if (q < 0) continue;
    if (p >= 0 && p != q) return invalidArgument(clash(p, q, chunks_));
    p = q;
  }
  // Nothing tells (scratch never written): the scratch chunk keeps its own index's place.
  if (p < 0) p = static_cast<int64_t>((src ? s.srcOffset : s.dstOffset) % chunks_);
  for (const bool isSrc : {true, false}) {
    if (!(isSrc ? src : dst) || (isSrc ? s.src : s.dst) != BufRef::kScratch) continue;
    const uint64_t first = isSrc ? s.srcOffset : s.dstOffset;
    for (uint64_t j = 0; j < std::max<uint64_t>(s.count, 1); ++j) {
      const int64_t want = static_cast<int64_t>((static_cast<uint64_t>(p) + j) % chunks_);
      const int64_t had = placeOf(r, BufRef::kScratch, first + j);
      if (had >= 0 && had != want) {
        return invalidArgument("scratch chunk " + std::to_string(first + j) + ": " +
                               clash(had, want, chunks_));
      }
      scratch_[r][first + j] = want;
    }
  }
  return p;
}

Expected<uint64_t> Places::remap(int r, std::vector<Step>* steps,
                                 const std::vector<std::string>& where) {
  const std::vector<int64_t>& s = scratch_[r];
  // Scratch chunk t at place q goes to block b(t - q) at place q: chunks t, t+1 of one run
  // at places q, q+1 share t - q and so stay adjacent; distinct chunks never meet.
  std::vector<int64_t> shifts;
  for (size_t t = 0; t < s.size(); ++t) {
    if (s[t] >= 0) shifts.push_back(static_cast<int64_t>(t) - s[t]);
  }
  std::sort(shifts.begin(), shifts.end());
  shifts.erase(std::unique(shifts.begin(), shifts.end()), shifts.end());
  auto to = [&](uint64_t t) -> int64_t {
    if (t >= s.size() || s[t] < 0) return -1;
    const auto b = std::lower_bound(shifts.begin(), shifts.end(), static_cast<int64_t>(t) - s[t]);
    return (b - shifts.begin()) * static_cast<int64_t>(chunks_) + s[t];
  };
  for (size_t i = 0; i < steps->size(); ++i) {
    Step& st = (*steps)[i];
    for (const bool isSrc : {true, false}) {
      const bool uses = isSrc ? needsSrc(st.op) : needsDst(st.op);
      if (!uses || (isSrc ? st.src : st.dst) != BufRef::kScratch) continue;
      uint64_t& first = isSrc ? st.srcOffset : st.dstOffset;
      const int64_t at = to(first);
      for (uint64_t j = 1; j < st.count; ++j) {
        if (to(first + j) != at + static_cast<int64_t>(j)) {
          return invalidArgument(where[i] + ": its scratch chunks [" + std::to_string(first) +
                                 ", " + std::to_string(first + st.count) +
                                 ") hold data that wraps past the end of a block, which one "
                                 "run of Braid's scratch cannot hold");
        }
      }
      first = static_cast<uint64_t>(at);
    }
  }
  return static_cast<uint64_t>(shifts.size()) * chunks_;
}

}  // namespace braid::algo::msccl
