#include "runtime/algorithm_proof.h"

#include <algorithm>
#include <cstring>
#include <regex>

#include "algorithms/reference.h"
#include "exec/reduce.h"
#include "exec/simulator.h"
#include "exec/window_simulator.h"

namespace braid {
namespace {

using algo::Collective;

constexpr uint64_t kLargeOddCount = 1001;
constexpr uint64_t kSmallStep = 64;  // elements: the large count then runs in passes
// Window programs: elements of a window area (64 KiB of int32: the large count's blocks of
// up to 16 ranks in one pass; the host's areas are larger, BRAID_SHM_WINDOW_BYTES), and a
// small one in which the large count runs in passes.
constexpr uint64_t kWindowElems = (64 << 10) / 4;
constexpr uint64_t kSmallWindowElems = 256;

// The element size the file's sizes are read with: its first element type's, else 4.
uint64_t elemSizeOf(const algo::AlgoFile& f) {
  for (int t = 0; t < braidNumTypes; ++t) {
    const auto type = static_cast<braidDataType_t>(t);
    if (!f.dtypes.empty() && f.dtypes.front() == datatypeName(type)) return datatypeSize(type);
  }
  return 4;
}

// The proof's input values: small integers, distinct per (rank, index) where the
// collective moves data. Sums are int32 (they wrap alike in any order); avg's are float32
// multiples of the rank count, n * base with |base| <= 5, exact up to 1,800 ranks, so every
// average is an exact integer whatever the order of the sum, and dividing twice, never, or
// a partial sum shows.
int64_t baseValue(Collective c, braidRedOp_t op, int rank, uint64_t i) {
  if (op == braidAvg) return static_cast<int64_t>((rank * 7 + i * 3) % 11) - 5;
  if (algo::reduces(c)) return static_cast<int64_t>((rank * 7919 + i * 31) % 2001) - 1000;
  return static_cast<int32_t>(rank * 1000003 + i);  // tells every (rank, index) apart
}

int64_t inputOf(Collective c, braidRedOp_t op, int n, int rank, uint64_t i) {
  const int64_t v = baseValue(c, op, rank, i);
  return op == braidAvg ? v * n : v;
}

// One element of the probe's type (float32 for avg, else int32).
void storeValue(braidRedOp_t op, int64_t v, uint8_t* at) {
  if (op == braidAvg) {
    const float f = static_cast<float>(v);
    std::memcpy(at, &f, 4);
  } else {
    const int32_t x = static_cast<int32_t>(v);
    std::memcpy(at, &x, 4);
  }
}

int64_t loadValue(braidRedOp_t op, const uint8_t* at) {
  if (op == braidAvg) {
    float f;
    std::memcpy(&f, at, 4);
    return static_cast<int64_t>(f) == f ? static_cast<int64_t>(f) : INT64_MIN;
  }
  int32_t x;
  std::memcpy(&x, at, 4);
  return x;
}

// What rank r's output element j must hold (as loadValue reads it); false where nothing
// is defined.
bool expected(const algo::AlgoFile& f, braidRedOp_t op, int n, int r, uint64_t count, uint64_t j,
              int64_t* v) {
  const algo::OutputSource from = algo::outputSource(f.collective, r, count, f.root, j);
  switch (from.kind) {
    case algo::OutputSource::Kind::kReduce: {
      uint32_t sum = 0;  // wraps as int32 sums do; avg's never come near
      for (int p = 0; p < n; ++p) {
        sum += static_cast<uint32_t>(baseValue(f.collective, op, p, from.index));
      }
      *v = static_cast<int32_t>(sum);  // avg: (sum of n * base) / n
      return true;
    }
    case algo::OutputSource::Kind::kCopy:
      *v = inputOf(f.collective, op, n, from.from, from.index);
      return true;
    case algo::OutputSource::Kind::kUndefined:
      break;
  }
  return false;
}

// "step 12" in a simulator message, for a schedule cut into passes: the file's step too.
std::string fileSteps(const std::string& msg, const std::vector<std::vector<size_t>>& origin) {
  static const std::regex rankStep("rank (\\d+),? \\(?(?:call \\d+,? )?step (\\d+)");
  std::string out;
  auto it = std::sregex_iterator(msg.begin(), msg.end(), rankStep);
  size_t last = 0;
  for (; it != std::sregex_iterator(); ++it) {
    const size_t r = std::stoul((*it)[1]), i = std::stoul((*it)[2]);
    out += msg.substr(last, it->position() + it->length() - last);
    if (r < origin.size() && i < origin[r].size()) {
      out += " (file step " + std::to_string(origin[r][i]) + ")";
    }
    last = it->position() + it->length();
  }
  return out + msg.substr(last);
}

struct Probe {
  uint64_t count = 0;
  bool inPlace = false;
  braidRedOp_t op = braidSum;
  uint64_t maxStep = 1 << 16;  // FIFO programs: elements a step moves at most
  uint8_t fill = 0x5a;
  // Window programs: elements of a window area, whether every rank lends its buffers,
  // the ranks' order (a seed) and the rounds run before.
  uint64_t windowElems = kWindowElems;
  bool lend = false;
  uint64_t seed = 0;
  uint64_t roundsBefore = 0;
  std::string describe(bool windowed) const {
    std::string d = "count " + std::to_string(count) + (inPlace ? ", in place" : ", out of place");
    if (op == braidAvg) d += ", avg";
    if (!windowed) {
      return d + (maxStep < (1 << 16) ? ", steps of at most " + std::to_string(maxStep) : "");
    }
    if (windowElems < kWindowElems) d += ", windows of " + std::to_string(windowElems);
    return d + (lend ? ", buffers lent" : "");
  }
};

// Every rank's buffers for a probe, filled: inputs with the probe's values, outputs (and
// the rest of an in-place buffer) with its fill.
std::vector<SimRank> buffersFor(const algo::AlgoFile& f, int n, const Probe& pr,
                                std::vector<algo::RankLayout>* lay) {
  std::vector<SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    lay->push_back(algo::rankLayout(f.collective, n, r, pr.count, f.root, pr.inPlace));
    const algo::RankLayout& l = lay->back();
    SimRank& sr = ranks[r];
    sr.input.resize(l.inputElems * 4);
    for (uint64_t i = 0; i < l.inputElems; ++i) {
      storeValue(pr.op, inputOf(f.collective, pr.op, n, r, i), sr.input.data() + i * 4);
    }
    sr.output.assign((l.inPlace ? l.storageElems : l.outputElems) * 4, pr.fill);
    if (l.inPlace) {
      sr.inPlace = true;
      sr.inPlaceOffset = l.inPlaceOffset;
      sr.outputOffset = l.outputOffset;
      sr.outputElems = l.outputWindow;
      std::copy(sr.input.begin(), sr.input.end(), sr.output.begin() + l.inPlaceOffset * 4);
    }
  }
  return ranks;
}

Status checkResults(const algo::AlgoFile& f, const Probe& pr, const std::vector<SimRank>& ranks,
                    const std::vector<algo::RankLayout>& lay) {
  const int n = static_cast<int>(ranks.size());
  for (int r = 0; r < n; ++r) {
    const uint8_t* out = ranks[r].output.data() + (lay[r].inPlace ? lay[r].outputOffset * 4 : 0);
    for (uint64_t j = 0; j < lay[r].outputElems; ++j) {
      int64_t want = 0;
      if (!expected(f, pr.op, n, r, pr.count, j, &want)) continue;
      const int64_t got = loadValue(pr.op, out + j * 4);
      if (got == want) continue;
      return invalidArgument(
          "wrong result: rank " + std::to_string(r) + " output[" + std::to_string(j) +
          "] = " + (got == INT64_MIN ? std::string("a fraction") : std::to_string(got)) +
          ", want " + std::to_string(want) +
          " (a chunk sent to the wrong place, a missing or doubled contribution, " +
          (pr.op == braidAvg ? "avg's division not done once (\"final\"), " : "") +
          "or a read of output or scratch before its write)");
    }
  }
  return Status::ok();
}

Status runProbe(const algo::AlgoFile& f, const algo::FileProgram& prog, const Probe& pr) {
  const int n = prog.nranks;
  std::vector<algo::Schedule> scheds;
  std::vector<std::vector<size_t>> origin(n);
  for (int r = 0; r < n; ++r) {
    algo::CollArgs a;
    a.collective = f.collective;
    a.rank = r;
    a.nranks = n;
    a.count = pr.count;
    a.elemSize = 4;
    a.inPlace = pr.inPlace;
    a.root = f.root;
    a.maxStepElems = pr.maxStep;
    if (prog.windowed) a.windowElems = pr.windowElems;
    BRAID_ASSIGN_OR_RETURN(algo::Schedule s, algo::instantiate(f, prog, a, &origin[r]));
    scheds.push_back(std::move(s));
  }
  const braidDataType_t type = pr.op == braidAvg ? braidFloat32 : braidInt32;
  std::vector<algo::RankLayout> lay;
  std::vector<SimRank> ranks = buffersFor(f, n, pr, &lay);
  Status st;
  if (prog.windowed) {
    // Two calls back to back, as a job makes them: the second's rounds reuse the halves
    // peers may still read in the first's.
    std::vector<algo::RankLayout> firstLay;
    std::vector<SimRank> first = buffersFor(f, n, pr, &firstLay);
    WindowSimOptions opts;
    opts.windowBytes = pr.windowElems * 4;
    opts.seed = pr.seed;
    opts.roundsBefore = pr.roundsBefore;
    opts.lendInput.assign(n, pr.lend);
    opts.lendOutput.assign(n, pr.lend);
    st = simulateWindows({{&scheds, &first, type, pr.op}, {&scheds, &ranks, type, pr.op}}, opts);
    if (st.isOk()) st = checkResults(f, pr, first, firstLay);
  } else {
    SimOptions opts;
    opts.scratchFill = pr.fill;
    st = simulate(scheds, type, pr.op, ranks, opts);
  }
  if (!st.isOk()) return invalidArgument(fileSteps(st.message(), origin));
  return checkResults(f, pr, ranks, lay);
}

// The probes of one count and mode: FIFO programs twice with different fills, and in
// small steps at the large count; window programs in rank order and in a seeded order with
// buffers lent, and in small windows (many passes) at the large count.
std::vector<Probe> probesFor(const algo::FileProgram& prog, uint64_t count, bool inPlace,
                             braidRedOp_t op) {
  Probe a;
  a.count = count;
  a.inPlace = inPlace;
  a.op = op;
  Probe b = a;  // outputs filled otherwise; window programs: lent, seeded, the other half
  b.fill = 0xc3;
  b.lend = prog.windowed;
  b.seed = prog.windowed ? 7 : 0;
  b.roundsBefore = prog.windowed ? 1 : 0;
  Probe c = b;  // passes: in small steps (FIFO) or small windows
  c.fill = 0x3c;
  c.seed = prog.windowed ? 3 : 0;
  if (prog.windowed) {
    c.windowElems = kSmallWindowElems;
  } else {
    c.maxStep = kSmallStep;
  }
  std::vector<Probe> out = {a, b};
  if (count >= kLargeOddCount) out.push_back(c);
  return out;
}

}  // namespace

std::vector<uint64_t> proofCounts(const algo::AlgoFile& f, int nranks) {
  const uint64_t es = elemSizeOf(f);
  const uint64_t n = static_cast<uint64_t>(nranks);
  std::vector<uint64_t> out;
  auto add = [&](uint64_t c) {
    if (c <= UINT64_MAX / es && f.sizes.contains(c * es) &&
        std::find(out.begin(), out.end(), c) == out.end()) {
      out.push_back(c);
    }
  };
  for (uint64_t c : {uint64_t{0}, uint64_t{1}, n - 1, n + 1, kLargeOddCount}) add(c);
  // The range's smallest count, and a large odd count above it, where the probes miss it.
  const uint64_t lowBytes = f.sizes.min + (f.sizes.minInclusive ? 0 : 1);
  const uint64_t low = (lowBytes + es - 1) / es;
  add(low);
  add(low + kLargeOddCount - (low % 2 == 0 ? 0 : 1));
  return out;
}

Status proveAlgorithm(const algo::AlgoFile& f, int nranks, const std::string& where) {
  const std::string head = where + ": " + std::to_string(nranks) + " ranks: ";
  const algo::FileProgram* prog = f.programFor(nranks);
  if (!f.claims(nranks) || prog == nullptr) {
    return invalidArgument(head + "the file does not support " + std::to_string(nranks) +
                           " ranks (it claims " + f.ranksSpec + ")");
  }
  const std::vector<uint64_t> counts = proofCounts(f, nranks);
  if (counts.empty()) {
    return invalidArgument(head + "its sizes " + f.sizes.describe() + " hold no count of " +
                           std::to_string(elemSizeOf(f)) +
                           "-byte elements, so no call would use it");
  }
  std::vector<braidRedOp_t> ops = {braidSum};
  if (algo::reduces(f.collective) && f.allowsOp("avg")) ops.push_back(braidAvg);
  for (braidRedOp_t op : ops) {
    for (bool inPlace : {false, true}) {
      if (!(inPlace ? f.inPlace : f.outOfPlace)) continue;
      for (uint64_t count : counts) {
        for (const Probe& p : probesFor(*prog, count, inPlace, op)) {
          const Status st = runProbe(f, *prog, p);
          if (!st.isOk()) {
            return invalidArgument(head + p.describe(prog->windowed) + ": " + st.message());
          }
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace braid
