#include "select/tuning.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/env.h"
#include "select/select.h"

namespace braid {
namespace {

// "key=value" with a positive finite number; false otherwise.
bool keyValue(const std::string& word, const char* key, double* out) {
  const std::string prefix = std::string(key) + "=";
  if (word.rfind(prefix, 0) != 0) return false;
  const char* begin = word.c_str() + prefix.size();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0' || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

// "bytes=0-256k", "bytes=2m-inf": the fit's band, lo < hi.
bool parseBand(const std::string& word, AlgoFit* fit) {
  if (word.rfind("bytes=", 0) != 0) return false;
  const std::string range = word.substr(6);
  const size_t dash = range.find('-');
  if (dash == std::string::npos) return false;
  const int64_t lo = parseSize(range.substr(0, dash));
  const std::string hiText = range.substr(dash + 1);
  const int64_t hi = hiText == "inf" ? -2 : parseSize(hiText);
  if (lo < 0 || hi == -1 || (hi >= 0 && hi <= lo)) return false;
  fit->loBytes = static_cast<uint64_t>(lo);
  fit->hiBytes = hi == -2 ? UINT64_MAX : static_cast<uint64_t>(hi);
  return true;
}

// The entry whose rank count is nearest `nranks` (ties: the smaller).
const Tuning::LinkEntry* nearestLink(const Tuning& t, const std::string& transport, int nranks) {
  const Tuning::LinkEntry* best = nullptr;
  for (const Tuning::LinkEntry& e : t.links) {
    if (e.transport != transport) continue;
    const int d = std::abs(e.nranks - nranks);
    const int bestD = best == nullptr ? 0 : std::abs(best->nranks - nranks);
    if (best == nullptr || d < bestD || (d == bestD && e.nranks < best->nranks)) best = &e;
  }
  return best;
}

}  // namespace

Expected<Tuning> Tuning::parse(const std::string& text, const std::string& source) {
  Tuning t;
  t.source = source;
  std::istringstream lines(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(lines, line)) {
    ++lineNo;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string word; in >> word;) w.push_back(word);
    if (w.empty()) continue;
    const auto bad = [&](const std::string& why) {
      return invalidArgument(source + ":" + std::to_string(lineNo) + ": " + why);
    };
    int nranks = 0;
    if (w.size() >= 3) nranks = std::atoi(w[2].c_str());
    if (w[0] == "link") {
      LinkEntry e;
      if (w.size() != 5 || nranks < 1 || !keyValue(w[3], "alpha_us", &e.cost.alphaUs) ||
          !keyValue(w[4], "gbps", &e.cost.gbps) || e.cost.gbps <= 0) {
        return bad("expected 'link <transport> <nranks> alpha_us=<us> gbps=<GB/s>'");
      }
      e.transport = w[1];
      e.nranks = nranks;
      t.links.push_back(e);
    } else if (w[0] == "fit") {
      FitEntry e;
      if ((w.size() != 7 && w.size() != 8) || nranks < 1 ||
          !keyValue(w[5], "base_us", &e.fit.baseUs) || !keyValue(w[6], "gbps", &e.fit.gbps) ||
          e.fit.gbps <= 0 || (w.size() == 8 && !parseBand(w[7], &e.fit))) {
        return bad("expected 'fit <transport> <nranks> <collective> <algorithm> base_us=<us> "
                   "gbps=<GB/s> [bytes=<lo>-<hi>]'");
      }
      if (!parseCollective(w[3], &e.fit.collective)) return bad("unknown collective '" + w[3] + "'");
      if (!algo::parseAlgorithm(w[4], &e.fit.algorithm)) {
        return bad("unknown algorithm '" + w[4] + "'");
      }
      if (!algo::supports(e.fit.algorithm, e.fit.collective)) {
        return bad(w[4] + " does not implement " + w[3]);
      }
      e.transport = w[1];
      e.nranks = nranks;
      t.fits.push_back(e);
    } else {
      return bad("unknown entry '" + w[0] + "' (expected link or fit)");
    }
  }
  return t;
}

Expected<Tuning> Tuning::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) return invalidArgument("BRAID_TUNING_FILE " + path + " cannot be read");
  std::stringstream text;
  text << f.rdbuf();
  return parse(text.str(), path);
}

CostInputs applyTuning(CostInputs in, const Tuning& tuning, const std::string& intraTransport) {
  bool used = false;
  if (in.nodes <= 1) {
    if (const Tuning::LinkEntry* e = nearestLink(tuning, intraTransport, in.nranks)) {
      in.intra = e->cost;
      used = true;
    }
    for (const Tuning::FitEntry& e : tuning.fits) {
      if (e.transport == intraTransport && e.nranks == in.nranks) {
        in.fits.push_back(e.fit);
        used = true;
      }
    }
  } else {
    if (const Tuning::LinkEntry* e = nearestLink(tuning, intraTransport, in.ranksPerNode)) {
      in.intra = e->cost;
      used = true;
    }
    if (const Tuning::LinkEntry* e = nearestLink(tuning, "socket", in.nranks)) {
      in.inter = e->cost;
      used = true;
    }
  }
  if (used) in.source = tuning.source + " (" + intraTransport + ")";
  return in;
}

}  // namespace braid
