#include "runtime/algorithm_proof.h"

#include <algorithm>
#include <cstring>
#include <regex>

#include "exec/reduce.h"
#include "exec/simulator.h"

namespace braid {
namespace {

using algo::Collective;

constexpr uint64_t kLargeOddCount = 1001;
constexpr uint64_t kSmallStep = 64;  // elements: the large count then runs in passes

// The element size the file's sizes are read with: its first element type's, else 4.
uint64_t elemSizeOf(const algo::AlgoFile& f) {
  for (int t = 0; t < braidNumTypes; ++t) {
    const auto type = static_cast<braidDataType_t>(t);
    if (!f.dtypes.empty() && f.dtypes.front() == datatypeName(type)) return datatypeSize(type);
  }
  return 4;
}

bool reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

int32_t inputValue(Collective c, int rank, uint64_t i) {
  if (reduces(c)) return static_cast<int32_t>((rank * 7919 + i * 31) % 2001) - 1000;
  return static_cast<int32_t>(rank * 1000003 + i);  // tells every (rank, index) apart
}

// Rank r's buffers as NCCL lays them out, in elements.
struct Layout {
  uint64_t input = 0, output = 0;
  uint64_t inPlaceOffset = 0;  // where the input lies in the storage (in place)
  uint64_t outputOffset = 0;   // where the output lies in the storage (in place)
  uint64_t storage = 0;        // in place: the one buffer's size
};

Layout layoutOf(const algo::AlgoFile& f, int n, int r, uint64_t count, bool inPlace) {
  Layout l;
  l.input = algo::blocksOf(f.collective, true, n, r, f.root) * count;
  l.output = algo::blocksOf(f.collective, false, n, r, f.root) * count;
  l.storage = std::max(l.input, l.output);
  if (!inPlace) return l;
  const bool bigOutput = f.collective == Collective::kAllGather ||
                         (f.collective == Collective::kGather && r == f.root);
  const bool bigInput = f.collective == Collective::kReduceScatter ||
                        (f.collective == Collective::kScatter && r == f.root);
  if (bigOutput) l.inPlaceOffset = r * count;
  if (bigInput) l.outputOffset = r * count;
  return l;
}

// What rank r's output element j must hold; false where nothing is defined.
bool expected(const algo::AlgoFile& f, int n, int r, uint64_t count, uint64_t j, int32_t* v) {
  switch (f.collective) {
    case Collective::kAllReduce:
    case Collective::kReduce:
    case Collective::kReduceScatter: {
      const uint64_t at = f.collective == Collective::kReduceScatter ? r * count + j : j;
      uint32_t sum = 0;  // wraps as int32 sums do
      for (int p = 0; p < n; ++p) sum += static_cast<uint32_t>(inputValue(f.collective, p, at));
      *v = static_cast<int32_t>(sum);
      return f.collective != Collective::kReduce || r == f.root;
    }
    case Collective::kAllGather:
    case Collective::kGather:
      *v = inputValue(f.collective, static_cast<int>(j / count), j % count);
      return true;
    case Collective::kBroadcast:
      *v = inputValue(f.collective, f.root, j);
      return true;
    case Collective::kScatter:
      *v = inputValue(f.collective, f.root, r * count + j);
      return true;
    case Collective::kAllToAll:
      *v = inputValue(f.collective, static_cast<int>(j / count), r * count + j % count);
      return true;
    case Collective::kAllToAllv:
      break;
  }
  return false;
}

// "step 12" in a simulator message, for a schedule cut into passes: the file's step too.
std::string fileSteps(const std::string& msg, const std::vector<std::vector<size_t>>& origin) {
  static const std::regex rankStep("rank (\\d+) step (\\d+)");
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
  uint64_t maxStep = 1 << 16;
  uint8_t fill = 0x5a;
  std::string describe() const {
    return "count " + std::to_string(count) + (inPlace ? ", in place" : ", out of place") +
           (maxStep < (1 << 16) ? ", steps of at most " + std::to_string(maxStep) : "");
  }
};

Status runProbe(const algo::AlgoFile& f, const algo::FileProgram& prog, const Probe& pr) {
  const int n = prog.nranks;
  std::vector<algo::Schedule> scheds;
  std::vector<std::vector<size_t>> origin(n);
  std::vector<SimRank> ranks(n);
  std::vector<Layout> lay;
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
    BRAID_ASSIGN_OR_RETURN(algo::Schedule s, algo::instantiate(f, prog, a, &origin[r]));
    scheds.push_back(std::move(s));
    lay.push_back(layoutOf(f, n, r, pr.count, pr.inPlace));
    const Layout& l = lay.back();
    SimRank& sr = ranks[r];
    sr.input.resize(l.input * 4);
    for (uint64_t i = 0; i < l.input; ++i) {
      const int32_t v = inputValue(f.collective, r, i);
      std::memcpy(sr.input.data() + i * 4, &v, 4);
    }
    sr.output.assign((pr.inPlace ? l.storage : l.output) * 4, pr.fill);
    if (pr.inPlace) {
      sr.inPlace = true;
      sr.inPlaceOffset = l.inPlaceOffset;
      sr.outputOffset = l.outputOffset;
      sr.outputElems = l.output;
      std::copy(sr.input.begin(), sr.input.end(), sr.output.begin() + l.inPlaceOffset * 4);
    }
  }
  SimOptions opts;
  opts.scratchFill = pr.fill;
  Status st = simulate(scheds, braidInt32, braidSum, ranks, opts);
  if (!st.isOk()) return invalidArgument(fileSteps(st.message(), origin));
  for (int r = 0; r < n; ++r) {
    const uint8_t* out = ranks[r].output.data() + (pr.inPlace ? lay[r].outputOffset * 4 : 0);
    for (uint64_t j = 0; j < lay[r].output; ++j) {
      int32_t want = 0, got = 0;
      if (!expected(f, n, r, pr.count, j, &want)) continue;
      std::memcpy(&got, out + j * 4, 4);
      if (got == want) continue;
      return invalidArgument("wrong result: rank " + std::to_string(r) + " output[" +
                             std::to_string(j) + "] = " + std::to_string(got) + ", want " +
                             std::to_string(want) +
                             " (a chunk sent to the wrong place, a missing or doubled "
                             "contribution, or a read of output or scratch before its write)");
    }
  }
  return Status::ok();
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
  if (prog->windowed) {
    return invalidArgument(head +
                           "a window program: Braid reads and writes them, but loads FIFO "
                           "programs only (docs/algorithms.md)");
  }
  const std::vector<uint64_t> counts = proofCounts(f, nranks);
  if (counts.empty()) {
    return invalidArgument(head + "its sizes " + f.sizes.describe() + " hold no count of " +
                           std::to_string(elemSizeOf(f)) +
                           "-byte elements, so no call would use it");
  }
  for (bool inPlace : {false, true}) {
    if (!(inPlace ? f.inPlace : f.outOfPlace)) continue;
    for (uint64_t count : counts) {
      std::vector<Probe> probes = {{count, inPlace, 1 << 16, 0x5a},
                                   {count, inPlace, 1 << 16, 0xc3}};
      if (count >= kLargeOddCount) probes.push_back({count, inPlace, kSmallStep, 0x3c});
      for (const Probe& p : probes) {
        const Status st = runProbe(f, *prog, p);
        if (!st.isOk()) return invalidArgument(head + p.describe() + ": " + st.message());
      }
    }
  }
  return Status::ok();
}

}  // namespace braid
