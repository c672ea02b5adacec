// braid-algo: users' algorithms as schedule files (docs/algorithms.md).
//
//   braid-algo check FILE [--ranks 2..16]     the simulator's verdict, a line per rank count
//   braid-algo dump ALGO --collective C --ranks N --count K [--in-place] [--root R]
//                   [--max-step M] [-o FILE]  a built-in's schedules as a file
//   braid-algo show FILE --ranks N [-o algo.svg]  a picture of the program
//   braid-algo price FILE --topo X.xml [--ranks N] [--ranks-per-node L]
//                                             the cost model's time per size, beside built-ins
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/file/schedule_file.h"
#include "algorithms/registry.h"
#include "runtime/algorithm_proof.h"
#include "select/cost_model.h"
#include "select/select.h"
#include "select/user_choice.h"
#include "show.h"
#include "topo/xml.h"

namespace {

using braid::algo::AlgoFile;

constexpr const char* kUsage =
    "usage: braid-algo check FILE [--ranks LO..HI | --ranks N]\n"
    "       braid-algo dump ALGO --collective C --ranks N --count K [--in-place] [--root R]\n"
    "                       [--max-step M] [-o FILE]\n"
    "       braid-algo show FILE --ranks N [-o FILE.svg]\n"
    "       braid-algo price FILE --topo X.xml [--ranks N] [--ranks-per-node L]\n"
    "Schedule files: docs/algorithms.md.\n";

struct Args {
  std::string command, target, output, collective = "allreduce", topo;
  int lo = 0, hi = 0, root = 0, perNode = 0;
  uint64_t count = 0, maxStep = 1 << 16;
  bool inPlace = false;
};

bool parseRanks(const std::string& s, Args* a) {
  const size_t dots = s.find("..");
  a->lo = std::atoi(s.c_str());
  a->hi = dots == std::string::npos ? a->lo : std::atoi(s.c_str() + dots + 2);
  return a->lo >= 1 && a->hi >= a->lo;
}

bool parseArgs(int argc, char** argv, Args* a) {
  if (argc < 3) return false;
  a->command = argv[1];
  a->target = argv[2];
  for (int i = 3; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--in-place") {
      a->inPlace = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (k == "--ranks") {
      if (!parseRanks(v, a)) return false;
    } else if (k == "-o" || k == "--output") {
      a->output = v;
    } else if (k == "--collective") {
      a->collective = v;
    } else if (k == "--count") {
      a->count = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--root") {
      a->root = std::atoi(v.c_str());
    } else if (k == "--max-step") {
      a->maxStep = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--topo") {
      a->topo = v;
    } else if (k == "--ranks-per-node") {
      a->perNode = std::atoi(v.c_str());
    } else {
      return false;
    }
  }
  return true;
}

braid::Expected<AlgoFile> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return braid::systemError("cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  braid::Expected<AlgoFile> f = braid::algo::parseAlgoFile(buf.str());
  if (!f.isOk()) return f.status().withContext(path + ": ");
  return f;
}

bool writeOut(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-")
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    std::fprintf(stderr, "braid-algo: cannot write %s\n", path.c_str());
    return false;
  }
  std::printf("%s\n", path.c_str());
  return true;
}

int check(const Args& a) {
  braid::Expected<AlgoFile> f = readFile(a.target);
  if (!f.isOk()) {
    std::printf("%s: refused: %s\n", a.target.c_str(), f.status().message().c_str());
    return 1;
  }
  std::vector<int> counts;
  if (a.lo == 0) {
    counts = f.value().nranks;
  } else {
    for (int n = a.lo; n <= a.hi; ++n) counts.push_back(n);
  }
  int failed = 0;
  for (int n : counts) {
    const braid::Status st = braid::proveAlgorithm(f.value(), n, a.target);
    if (st.isOk()) {
      std::string probes;
      for (uint64_t c : braid::proofCounts(f.value(), n)) {
        probes += (probes.empty() ? "" : ", ") + std::to_string(c);
      }
      std::printf("%d ranks: proven (counts %s)\n", n, probes.c_str());
    } else {
      ++failed;
      std::printf("%d ranks: refused: %s\n", n, st.message().c_str());
    }
  }
  return failed == 0 ? 0 : 1;
}

int dump(const Args& a) {
  braid::algo::Algorithm alg;
  braid::algo::Collective c;
  if (!braid::algo::parseAlgorithm(a.target, &alg) || !braid::parseCollective(a.collective, &c) ||
      !braid::algo::supports(alg, c) || c == braid::algo::Collective::kAllToAllv || a.lo < 1) {
    std::fprintf(stderr, "braid-algo dump: %s does not implement %s (or --ranks is missing)\n",
                 a.target.c_str(), a.collective.c_str());
    return 2;
  }
  std::vector<braid::algo::Schedule> ranks;
  braid::algo::CollArgs args;
  args.collective = c;
  args.nranks = a.lo;
  args.count = a.count;
  args.elemSize = 4;
  args.inPlace = a.inPlace;
  args.root = a.root;
  args.maxStepElems = a.maxStep;
  if (alg == braid::algo::Algorithm::kHierarchical) {
    for (int r = 0; r < a.lo; ++r) args.nodeOf.push_back(r / 2);  // two ranks per node
  }
  for (int r = 0; r < a.lo; ++r) {
    args.rank = r;
    ranks.push_back(braid::algo::buildSchedule(alg, args));
  }
  const AlgoFile f = braid::algo::fileFromSchedules(ranks, args, braid::algo::algorithmName(alg));
  return writeOut(a.output, braid::algo::writeAlgoFile(f)) ? 0 : 1;
}

int show(const Args& a) {
  braid::Expected<AlgoFile> f = readFile(a.target);
  if (!f.isOk()) {
    std::fprintf(stderr, "braid-algo: %s\n", f.status().message().c_str());
    return 1;
  }
  const int n = a.lo > 0 ? a.lo : f.value().nranks.front();
  const braid::algo::FileProgram* p = f.value().programFor(n);
  if (p == nullptr) {
    std::fprintf(stderr, "braid-algo: %s has no program for %d ranks (it claims %s)\n",
                 a.target.c_str(), n, f.value().ranksSpec.c_str());
    return 1;
  }
  return writeOut(a.output.empty() ? "algo.svg" : a.output, braid::tools::programSvg(f.value(), *p))
             ? 0
             : 1;
}

int price(const Args& a) {
  braid::Expected<AlgoFile> f = readFile(a.target);
  if (!f.isOk()) {
    std::fprintf(stderr, "braid-algo: %s\n", f.status().message().c_str());
    return 1;
  }
  if (a.topo.empty()) {
    std::fprintf(stderr, "braid-algo price: --topo X.xml is needed\n");
    return 2;
  }
  braid::Expected<braid::topo::Topology> topo = braid::topo::loadXmlFile(a.topo);
  if (!topo.isOk()) {
    std::fprintf(stderr, "braid-algo: %s\n", topo.status().message().c_str());
    return 1;
  }
  const AlgoFile& file = f.value();
  const int n = a.lo > 0 ? a.lo : file.nranks.back();
  braid::CostInputs in = braid::costInputsFor(topo.value(), n, a.perNode > 0 ? a.perNode : n);
  // A window program runs on host memory over the node's shared windows: priced, built-ins
  // too, as host calls on one node would be.
  const braid::algo::FileProgram* prog = file.programFor(n);
  if (prog != nullptr && prog->windowed) in.sharedWindows = in.nodes <= 1;
  std::printf("# %s (%s) on %s, %d ranks, %d per node; times in us\n", file.name.c_str(),
              braid::algo::collectiveName(file.collective), a.topo.c_str(), n, in.ranksPerNode);
  std::printf("%12s %12s  %-18s %s\n", "bytes", file.name.c_str(), "best built-in", "serves");
  for (uint64_t bytes = 1024; bytes <= (1ull << 30); bytes *= 4) {
    const auto ranked =
        braid::rankAlgorithms(file.collective, braid::modelBytes(file.collective, bytes, n), in);
    const double mine = braid::priceProgramUs(file, bytes, in);
    const std::string why = braid::whyNotServed(file, file.collective, bytes, n, nullptr, &in);
    char best[64] = "-";
    if (!ranked.empty()) {
      std::snprintf(best, sizeof(best), "%s %.1f", braid::algo::algorithmName(ranked[0].first),
                    ranked[0].second);
    }
    std::printf("%12llu %12.1f  %-18s %s\n", static_cast<unsigned long long>(bytes), mine, best,
                why.empty() ? "yes" : why.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parseArgs(argc, argv, &a)) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  if (a.command == "check") return check(a);
  if (a.command == "dump") return dump(a);
  if (a.command == "show") return show(a);
  if (a.command == "price") return price(a);
  std::fprintf(stderr, "%s", kUsage);
  return 2;
}
