// instantiate (algorithms/file/schedule_file.h): a program's chunks as one call's elements.
#include <algorithm>
#include <string>

#include "algorithms/file/schedule_file.h"
#include "algorithms/reference.h"

namespace braid::algo {
namespace {

// One pass of a program over elements [lo, lo + sub) of every block of `count`.
struct Pass {
  uint64_t count = 0;  // elements per block
  uint64_t chunks = 1;
  uint64_t lo = 0;
  uint64_t sub = 0;
  uint64_t at(uint64_t block, uint64_t j) const {  // start of chunk j (0..chunks) of a block
    return block * count + lo +
           static_cast<uint64_t>((static_cast<unsigned __int128>(j) * sub) / chunks);
  }
};

struct Piece {
  uint64_t offset = 0;
  uint64_t count = 0;
};

// Chunks [first, first + n) as element ranges, one per block touched; merged into one when
// the pass covers whole blocks (they are then contiguous).
std::vector<Piece> piecesOf(const Pass& p, uint64_t first, uint64_t n, bool whole) {
  std::vector<Piece> out;
  if (n == 0) return {Piece{p.at(first / p.chunks, first % p.chunks), 0}};
  for (uint64_t k = first; k < first + n;) {
    const uint64_t block = k / p.chunks;
    const uint64_t end = std::min(first + n, (block + 1) * p.chunks);
    const uint64_t b = p.at(block, k % p.chunks);
    const uint64_t e = p.at(block, end - block * p.chunks);
    if (whole && !out.empty()) {
      out.back().count = e - out.back().offset;
    } else {
      out.push_back(Piece{b, e - b});
    }
    k = end;
  }
  return out;
}

bool chunked(BufRef b) { return b != BufRef::kNone; }
bool isWindow(BufRef b) { return b == BufRef::kWindowIn || b == BufRef::kWindowOut; }

// A pass's layout of the window areas: its share of every block, packed (pass p's share
// of block b at b * sub), so that a pass needs sub elements per block of a window.
Pass windowPass(const Pass& p) { return Pass{p.sub, p.chunks, 0, p.sub}; }

// Appends step `s` of the program for one pass; fails where its runs disagree.
Status addStep(const Step& s, const Pass& p, bool whole, std::vector<Step>* out) {
  const bool src = chunked(s.src) && needsSrc(s.op);
  const bool dst = chunked(s.dst) && needsDst(s.op);
  if (!src && !dst) {  // a window's sync step: no elements
    out->push_back(s);
    return Status::ok();
  }
  const Pass w = windowPass(p);
  std::vector<Piece> sp =
      src ? piecesOf(isWindow(s.src) ? w : p, s.srcOffset, s.count, whole) : std::vector<Piece>{};
  std::vector<Piece> dp =
      dst ? piecesOf(isWindow(s.dst) ? w : p, s.dstOffset, s.count, whole) : std::vector<Piece>{};
  const std::vector<Piece>& lead = src ? sp : dp;
  if (src && dst) {
    bool same = sp.size() == dp.size();
    for (size_t i = 0; same && i < sp.size(); ++i) same = sp[i].count == dp[i].count;
    if (!same) {
      return invalidArgument(
          "its src chunks [" + std::to_string(s.srcOffset) + ", " +
          std::to_string(s.srcOffset + s.count) + ") and dst chunks [" +
          std::to_string(s.dstOffset) + ", " + std::to_string(s.dstOffset + s.count) +
          ") hold different numbers of elements at count " + std::to_string(p.count) +
          " (a run's chunks must sit at the same places within their blocks)");
    }
  }
  // bufOffset (a lent buffer's chunk) follows the source's blocks.
  std::vector<Piece> bp;
  if (s.op == OpKind::kReducePeers || s.op == OpKind::kCopyPeer) {
    bp = piecesOf(p, s.bufOffset, s.count, whole);
  }
  for (size_t i = 0; i < lead.size(); ++i) {
    Step e = s;
    e.count = lead[i].count;
    if (src) e.srcOffset = sp[i].offset;
    if (dst) e.dstOffset = dp[i].offset;
    if (i < bp.size()) e.bufOffset = bp[i].offset;
    if (i + 1 < lead.size()) e.batchWithNext = s.batchWithNext;
    out->push_back(e);
  }
  return Status::ok();
}

// The most elements one step of any rank moves in a pass of `sub` elements per block
// (pieces' lengths depend on the pass's size only, not on where it starts).
uint64_t largestStep(const FileProgram& prog, uint64_t count, uint64_t sub, bool whole) {
  const Pass pass{count, prog.chunksPerBlock, 0, sub};
  uint64_t most = 0;
  for (const std::vector<Step>& steps : prog.ranks) {
    for (const Step& s : steps) {
      // Local steps never pass through a FIFO: only messages bound the passes.
      if (s.count == 0 || !(needsSend(s.op) || needsRecv(s.op))) continue;
      const uint64_t first = needsSrc(s.op) && chunked(s.src) ? s.srcOffset : s.dstOffset;
      for (const Piece& pc : piecesOf(pass, first, s.count, whole)) {
        most = std::max(most, pc.count);
      }
    }
  }
  return most;
}

// The most elements of a window area any rank's step reaches in a pass of `sub` elements
// per block.
uint64_t windowExtent(const FileProgram& prog, uint64_t sub) {
  const Pass w{sub, prog.chunksPerBlock, 0, sub};
  uint64_t most = 0;
  for (const std::vector<Step>& steps : prog.ranks) {
    for (const Step& s : steps) {
      for (const auto& [buf, first] : {std::pair{s.src, s.srcOffset}, {s.dst, s.dstOffset}}) {
        if (!isWindow(buf) || s.count == 0) continue;
        for (const Piece& pc : piecesOf(w, first, s.count, false)) {
          most = std::max(most, pc.offset + pc.count);
        }
      }
    }
  }
  return most;
}

// In place, a copy of input elements onto the output elements that are the same memory
// does nothing; in a window program it would be a write of memory peers may read (a lent
// input), so it is left out.
bool copiesOntoItself(const Step& e, const RankLayout& l) {
  return l.inPlace && e.op == OpKind::kCopy && !e.final && e.src == BufRef::kInput &&
         e.dst == BufRef::kOutput && l.inPlaceOffset + e.srcOffset == l.outputOffset + e.dstOffset;
}

}  // namespace

Expected<Schedule> instantiate(const AlgoFile& file, const FileProgram& prog, const CollArgs& args,
                               std::vector<size_t>* origin) {
  if (args.nranks != prog.nranks || args.rank < 0 || args.rank >= prog.nranks) {
    return invalidArgument("the program for " + std::to_string(prog.nranks) +
                           " ranks cannot serve rank " + std::to_string(args.rank) + " of " +
                           std::to_string(args.nranks));
  }
  Schedule s;
  s.rank = args.rank;
  s.nranks = args.nranks;
  s.count = args.count;
  s.windowed = prog.windowed;
  s.lendsInput = !prog.lendsInput.empty() && prog.lendsInput[args.rank];
  s.lendsOutput = !prog.lendsOutput.empty() && prog.lendsOutput[args.rank];
  const uint64_t c = args.count;
  const uint64_t C = prog.chunksPerBlock;
  s.scratchElems =
      (prog.scratchChunks / C) * c +
      static_cast<uint64_t>((static_cast<unsigned __int128>(prog.scratchChunks % C) * c) / C);
  // Passes: as many as the largest step of any rank needs (alike on every rank, so
  // senders and receivers cut alike), more where rounding leaves a step over the limit.
  const uint64_t limit = std::max<uint64_t>(1, args.maxStepElems);
  const uint64_t most = largestStep(prog, c, c, true);
  uint64_t passes = 1;
  if (!prog.windowed) {
    passes = std::max<uint64_t>(1, (most + limit - 1) / limit);
    while (passes > 1 && passes < c &&
           largestStep(prog, c, (c + passes - 1) / passes, false) > limit) {
      ++passes;
    }
  } else if (args.windowElems != 0) {
    // A window program's areas hold a pass's share of its blocks: as many passes as make
    // that fit (the simulator finds an access past the area where none does).
    while (passes < c && windowExtent(prog, (c + passes - 1) / passes) > args.windowElems) {
      const uint64_t grow =
          passes * windowExtent(prog, (c + passes - 1) / passes) / args.windowElems;
      passes = std::min(c, std::max(passes + 1, grow));
    }
  }
  const RankLayout layout =
      rankLayout(args.collective, args.nranks, args.rank, c, args.root, args.inPlace);
  for (uint64_t q = 0; q < passes; ++q) {
    const uint64_t lo = q * c / passes;
    const Pass pass{c, C, lo, (q + 1) * c / passes - lo};
    for (size_t i = 0; i < prog.ranks[args.rank].size(); ++i) {
      std::vector<Step> steps;
      const Status st = addStep(prog.ranks[args.rank][i], pass, passes == 1, &steps);
      if (!st.isOk()) {
        return st.withContext(file.name + ": rank " + std::to_string(args.rank) + ", step " +
                              std::to_string(i) + ": ");
      }
      for (const Step& e : steps) {
        if (!copiesOntoItself(e, layout)) {
          s.steps.push_back(e);
        } else if (!e.batchWithNext && !s.steps.empty()) {
          s.steps.back().batchWithNext = false;  // the batch it ended ends before it
        }
      }
      if (origin != nullptr) origin->resize(s.steps.size(), i);
    }
  }
  return s;
}

}  // namespace braid::algo
