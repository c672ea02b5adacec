#include "select/device_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "select/cost_model.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

// Whether the windows' own program is `a` for `c` on `n` ranks (device_choice.h).
bool windowsRun(Algorithm a, Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce:
      return a == Algorithm::kDirect || (a == Algorithm::kTwoShot && n >= 3);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kBroadcast:
    case Collective::kReduce:
      return a == Algorithm::kDirect;
    default:
      return false;
  }
}

uint64_t ceilDiv(uint64_t a, uint64_t b) { return b == 0 ? 1 : (a + b - 1) / b; }

struct Priced {
  Algorithm algorithm;
  bool windows;
  double us;
  uint64_t rounds;
};

// The model's time for `a` on the device (S: the model's bytes): the closed form, plus
// the barriers of every round past the first on the windows, or the waits of every
// slot's worth past one per step when lowered.
Priced priceOnDevice(Algorithm a, bool windows, Collective c, uint64_t S, const CostInputs& in,
                     const DeviceShape& shape) {
  // A reduce's windows program mirrors broadcast's (the root reads n - 1 halves as the
  // peers read the root's): the same form, which the model names for broadcast only.
  const Collective as = c == Collective::kReduce && windows ? Collective::kBroadcast : c;
  const AlgoShape form = algorithmShape(a, as, in.nranks);
  const double alpha = in.intra.alphaUs;
  Priced p{a, windows, predictUs(a, as, S, in), 1};
  if (windows) {
    p.rounds = std::max<uint64_t>(1, ceilDiv(S, shape.halfBytes));
    p.us += static_cast<double>(p.rounds - 1) * form.steps * alpha;
    return p;
  }
  const double moved = form.traffic * static_cast<double>(S);
  const double waits = std::ceil(moved / static_cast<double>(std::max<size_t>(shape.slotBytes, 1)));
  p.rounds = static_cast<uint64_t>(std::max(waits, form.steps));
  p.us += std::max(0.0, waits - form.steps) * alpha;
  return p;
}

// Every way the device runs `c`, priced, cheapest first: the windows' programs and the
// lowered schedules of the other algorithms (the windows run the model's direct and
// two-shot forms themselves; hierarchical needs several nodes).
std::vector<Priced> rankOnDevice(Collective c, uint64_t rankBytes, const CostInputs& in,
                                 const DeviceShape& shape) {
  const uint64_t S = modelBytes(c, rankBytes, shape.nranks);
  std::vector<Priced> out;
  for (int i = 0; i < algo::kNumAlgorithms; ++i) {
    const auto a = static_cast<Algorithm>(i);
    const bool windows = windowsRun(a, c, shape.nranks);
    const bool lowered = algo::supports(a, c) && a != Algorithm::kDirect &&
                         a != Algorithm::kTwoShot && a != Algorithm::kHierarchical;
    if (!windows && !lowered) continue;
    const Priced p = priceOnDevice(a, windows, c, S, in, shape);
    if (std::isfinite(p.us)) out.push_back(p);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Priced& x, const Priced& y) { return x.us < y.us; });
  return out;
}

// The inputs the model prices device calls with (gpuFigures or one shared GPU).
CostInputs deviceInputs(const DeviceShape& shape, const Selector& selector, bool gpuFigures) {
  CostInputs in = gpuFigures ? selector.inputs() : oneGpuInputs(shape.nranks);
  // On one GPU every window lies in one memory, as host ranks' shared windows do: the
  // model's window forms price what each rank moves there, and a lowered schedule its
  // copies into the slots and out of them.
  in.sharedWindows = shape.oneDevice;
  return in;
}

DeviceChoice onWindows(Algorithm a, const DeviceShape& shape, uint64_t S, const char* why) {
  DeviceChoice out;
  out.algorithm = a;
  out.executor = DeviceExecutor::kWindows;
  out.roundBytes = shape.halfBytes;
  out.rounds = std::max<uint64_t>(1, ceilDiv(S, shape.halfBytes));
  out.why = why;
  return out;
}

DeviceChoice lowered(Algorithm a, const DeviceShape& shape, const char* why) {
  DeviceChoice out;
  out.algorithm = a;
  out.executor = DeviceExecutor::kLowered;
  out.roundBytes = shape.slotBytes;
  out.rounds = 0;  // not counted
  out.why = why;
  return out;
}

struct LoadedPrice {
  double us;
  uint64_t waits;
};

// A loaded program's walk (priceProgramUs), plus what lowering adds as for the built-ins:
// a rank whose sends move more than a slot per send step waits once per slot's worth.
LoadedPrice priceLoaded(const algo::AlgoFile& f, uint64_t rankBytes, const CostInputs& in,
                        const DeviceShape& shape) {
  LoadedPrice p{priceProgramUs(f, rankBytes, in), 0};
  const algo::FileProgram* prog = f.programFor(shape.nranks);
  if (prog == nullptr || !std::isfinite(p.us)) return p;
  const double chunk = static_cast<double>(rankBytes) / static_cast<double>(prog->chunksPerBlock);
  const double slot = static_cast<double>(std::max<size_t>(shape.slotBytes, 1));
  double extra = 0;
  for (const std::vector<algo::Step>& steps : prog->ranks) {
    double moved = 0, sends = 0;
    for (const algo::Step& s : steps) {
      if (!algo::needsSend(s.op)) continue;
      moved += chunk * static_cast<double>(s.count);
      sends += 1;
    }
    const double waits = std::ceil(moved / slot);
    p.waits = std::max(p.waits, static_cast<uint64_t>(std::max(waits, sends)));
    extra = std::max(extra, waits - sends);
  }
  p.us += extra * in.intra.alphaUs;
  return p;
}

DeviceChoice loweredLoaded(const algo::AlgoFile* f, const DeviceShape& shape, const char* why) {
  DeviceChoice out = lowered(Algorithm::kRing, shape, why);
  out.user = f;
  return out;
}

// Whether `f` may run a call (`fit`) the cost model decides, on the device: it serves the
// call and has a lowering, and no '^' rule of BRAID_ALGO excludes it by name.
bool competes(const algo::AlgoFile& f, Collective c, uint64_t rankBytes, int n, const CallFit* fit,
              const std::vector<std::string>* excluded) {
  if (!whyNotServed(f, c, rankBytes, n, fit).empty() || !whyNotOnDevice(f, n).empty()) {
    return false;
  }
  return excluded == nullptr ||
         std::find(excluded->begin(), excluded->end(), f.name) == excluded->end();
}

// The loaded algorithm BRAID_ALGO names for the call, lowered; a choice without `user`
// where its rule names none, or where none serves and the rule lists a built-in to run.
Expected<DeviceChoice> namedLoaded(Collective c, uint64_t rankBytes, const DeviceShape& shape,
                                   const Selector& selector, const CallFit* fit) {
  const AlgoPolicy& policy = selector.policy();
  bool exclude = false;
  const std::vector<std::string>* names = policy.userNames(c, rankBytes, &exclude);
  if (names == nullptr || exclude) return DeviceChoice{};
  Expected<const algo::AlgoFile*> file = firstServing(selector.userAlgorithms(), *names, c,
                                                      rankBytes, shape.nranks, fit, policy.spec());
  if (!file.isOk()) {
    if (policy.namesBuiltIn(c, rankBytes)) return DeviceChoice{};  // a built-in runs instead
    return file.status();
  }
  const std::string no = whyNotOnDevice(*file.value(), shape.nranks);
  if (!no.empty()) {
    return invalidArgument("BRAID_ALGO='" + policy.spec() + "' asks for " + file.value()->name +
                           ", which device calls cannot run: " + no);
  }
  return loweredLoaded(file.value(), shape, "BRAID_ALGO");
}

}  // namespace

std::string whyNotOnDevice(const algo::AlgoFile& f, int nranks) {
  const algo::FileProgram* prog = f.programFor(nranks);
  if (prog == nullptr) return "it has no program for " + std::to_string(nranks) + " ranks";
  if (prog->windowed) {
    return "its " + std::to_string(nranks) +
           "-rank program has window steps, which have no lowering to stream operations (it "
           "runs on host memory; device calls run the device windows' own programs)";
  }
  return "";
}

Expected<DeviceChoice> chooseDeviceCall(Collective c, uint64_t rankBytes, const DeviceShape& shape,
                                        const Selector& selector, bool gpuFigures,
                                        const CallFit* fit) {
  const int n = shape.nranks;
  const AlgoPolicy& policy = selector.policy();
  const uint64_t S = modelBytes(c, rankBytes, n);
  BRAID_ASSIGN_OR_RETURN(DeviceChoice named, namedLoaded(c, rankBytes, shape, selector, fit));
  if (named.user != nullptr) return named;
  // BRAID_ALGO naming an algorithm runs that algorithm's schedule, lowered; all-to-all-v
  // has no windows program.
  if (policy.names(c, rankBytes) || c == Collective::kAllToAllv) {
    BRAID_ASSIGN_OR_RETURN(Algorithm a,
                           policy.chooseFrom(c, rankBytes, defaultAlgorithms(c, rankBytes, n)));
    return lowered(a, shape, policy.names(c, rankBytes) ? "BRAID_ALGO" : "its only executor");
  }
  const bool allReduce = c == Collective::kAllReduce;
  if (allReduce && shape.twoShotBytes >= 0) {
    const bool two = n >= 3 && rankBytes >= static_cast<uint64_t>(shape.twoShotBytes);
    return onWindows(two ? Algorithm::kTwoShot : Algorithm::kDirect, shape, S,
                     "BRAID_CUDA_TWO_SHOT_BYTES");
  }
  if (c == Collective::kGather || c == Collective::kScatter || c == Collective::kAllToAll) {
    // The model has no load/store form for these: the windows' program, which moves
    // each byte once, as the lowered linear and pairwise schedules do through slots.
    return onWindows(Algorithm::kDirect, shape, S, "the windows' program");
  }
  if (!gpuFigures && !shape.oneDevice) {
    const bool two = allReduce && n >= 3 && rankBytes >= kDefaultTwoShotBytes;
    return onWindows(two ? Algorithm::kTwoShot : Algorithm::kDirect, shape, S,
                     "no GPU figures: the constant rule");
  }
  const CostInputs in = deviceInputs(shape, selector, gpuFigures);
  const std::vector<Priced> ranked = rankOnDevice(c, rankBytes, in, shape);
  std::vector<Algorithm> order;
  for (const Priced& p : ranked) order.push_back(p.algorithm);
  // '^' exclusions apply to the device's ranking as to the host's.
  BRAID_ASSIGN_OR_RETURN(Algorithm a, policy.chooseFrom(c, rankBytes, order));
  const auto it =
      std::find_if(ranked.begin(), ranked.end(), [a](const Priced& p) { return p.algorithm == a; });
  if (it == ranked.end()) return internalError("device choice: no price for the choice");
  const char* why = policy.overrides(c, rankBytes) ? "BRAID_ALGO" : "cost model";
  DeviceChoice out = it->windows ? onWindows(a, shape, S, why) : lowered(a, shape, why);
  out.rounds = it->rounds;
  out.predictedUs = it->us;
  // Loaded algorithms compete within the calls they serve, as on the host.
  bool exclude = false;
  const std::vector<std::string>* names = policy.userNames(c, rankBytes, &exclude);
  for (const auto& u : selector.userAlgorithms()) {
    if (!competes(*u, c, rankBytes, n, fit, exclude ? names : nullptr)) continue;
    const LoadedPrice p = priceLoaded(*u, rankBytes, in, shape);
    if (p.us < out.predictedUs) {
      out = loweredLoaded(u.get(), shape, "cost model");
      out.rounds = p.waits;
      out.predictedUs = p.us;
    }
  }
  return out;
}

std::string describeDeviceChoice(const DeviceChoice& choice) {
  char buf[160];
  if (choice.executor == DeviceExecutor::kWindows) {
    std::snprintf(buf, sizeof(buf), " on the windows, %llu round(s) of up to %llu bytes",
                  static_cast<unsigned long long>(choice.rounds),
                  static_cast<unsigned long long>(choice.roundBytes));
  } else {
    std::snprintf(buf, sizeof(buf), " lowered to stream operations, %llu-byte slots",
                  static_cast<unsigned long long>(choice.roundBytes));
  }
  std::string out = std::string(choice.name()) + (choice.user != nullptr ? " (loaded)" : "") + buf;
  if (choice.predictedUs > 0) {
    std::snprintf(buf, sizeof(buf), ", predicted %.1f us", choice.predictedUs);
    out += buf;
  }
  return out + " (" + choice.why + ")";
}

std::string explainDeviceCall(Collective c, uint64_t rankBytes, const DeviceShape& shape,
                              const Selector& selector, bool gpuFigures, const CallFit* fit) {
  // The model decides exactly where the choice carries its price (chooseDeviceCall).
  Expected<DeviceChoice> choice = chooseDeviceCall(c, rankBytes, shape, selector, gpuFigures, fit);
  if (!choice.isOk() || choice.value().predictedUs <= 0) return "";
  std::string out;
  char buf[80];
  const CostInputs in = deviceInputs(shape, selector, gpuFigures);
  for (const Priced& p : rankOnDevice(c, rankBytes, in, shape)) {
    std::snprintf(buf, sizeof(buf), "%s%s (%s) %.1f us", out.empty() ? "" : "; ",
                  algo::algorithmName(p.algorithm), p.windows ? "windows" : "lowered", p.us);
    out += buf;
  }
  for (const auto& u : selector.userAlgorithms()) {
    if (u->collective != c) continue;
    std::string no = whyNotServed(*u, c, rankBytes, shape.nranks, fit);
    if (no.empty()) no = whyNotOnDevice(*u, shape.nranks);
    if (no.empty()) {
      std::snprintf(buf, sizeof(buf), " %.1f us", priceLoaded(*u, rankBytes, in, shape).us);
      out += "; " + u->name + " (loaded, lowered)" + buf;
    } else {
      out += "; " + u->name + " (loaded) does not run this call: " + no;
    }
  }
  return out;
}

}  // namespace braid
