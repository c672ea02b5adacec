#include "train/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace braid::train {

namespace {

constexpr char kMagic[8] = {'B', 'R', 'A', 'I', 'D', 'C', 'K', '1'};

// What must match between a checkpoint and the run resuming it. The bucket
// size decides how ZeRO shards the optimizer state.
std::vector<int64_t> identity(const TrainConfig& cfg) {
  const Layout& l = cfg.layout;
  const ModelConfig& m = cfg.model;
  return {l.dp,    l.tp,  l.pp,  l.ep,        l.zero,    m.layers,   m.dModel,
          m.heads, m.seq, m.ff,  m.moe,       m.experts, m.topK,     m.moeEvery,
          static_cast<int64_t>(cfg.seed), l.zero ? cfg.bucketKb : 0};
}

void writeVec(std::ofstream& out, const std::vector<float>& v) {
  const uint64_t n = v.size();
  out.write(reinterpret_cast<const char*>(&n), sizeof(n));
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(n * 4));
}

bool readVec(std::ifstream& in, std::vector<float>* v) {
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), sizeof(n));
  if (!in || n != v->size()) return false;
  in.read(reinterpret_cast<char*>(v->data()), static_cast<std::streamsize>(n * 4));
  return static_cast<bool>(in);
}

std::string rankFile(const std::string& prefix, int rank) {
  return prefix + ".rank" + std::to_string(rank);
}

}  // namespace

std::string saveCheckpoint(const std::string& prefix, const TrainConfig& cfg, const Mesh& mesh,
                           int nextStep, ParamStore<float>* store, Optimizer* opt) {
  const std::string path = rankFile(prefix, mesh.worldRank);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return "cannot write checkpoint " + path;
  out.write(kMagic, sizeof(kMagic));
  std::vector<int64_t> id = identity(cfg);
  id.push_back(nextStep);
  out.write(reinterpret_cast<const char*>(id.data()), static_cast<std::streamsize>(id.size() * 8));
  for (int p = 0; p < kNumPools; ++p) {
    writeVec(out, store->weights(Pool(p)));
    writeVec(out, opt->firstMoment(Pool(p)));
    writeVec(out, opt->secondMoment(Pool(p)));
  }
  out.close();
  if (!out) return "writing checkpoint " + path + " failed";
  double done = 1;
  mesh.world.allReduce(&done, 1);  // every rank's file is complete before anyone goes on
  return "";
}

std::string loadCheckpoint(const std::string& prefix, const TrainConfig& cfg, const Mesh& mesh,
                           int* nextStep, ParamStore<float>* store, Optimizer* opt) {
  const std::string path = rankFile(prefix, mesh.worldRank);
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read checkpoint " + path + " (--resume takes the --save prefix)";
  char magic[sizeof(kMagic)];
  in.read(magic, sizeof(magic));
  std::vector<int64_t> want = identity(cfg);
  std::vector<int64_t> got(want.size() + 1);
  in.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * 8));
  if (!in || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return "checkpoint " + path + " is not a braid-train checkpoint";
  }
  if (!std::equal(want.begin(), want.end(), got.begin())) {
    return "checkpoint " + path + " was saved with another layout, model or seed; resume with "
           "the same --dp/--tp/--pp/--ep/--zero/--model/--seed (and --bucket-kb with ZeRO)";
  }
  for (int p = 0; p < kNumPools; ++p) {
    if (!readVec(in, &store->weights(Pool(p))) || !readVec(in, &opt->firstMoment(Pool(p))) ||
        !readVec(in, &opt->secondMoment(Pool(p)))) {
      return "checkpoint " + path + " is truncated or its sizes do not match this model";
    }
  }
  *nextStep = static_cast<int>(got.back());
  return "";
}

std::string dumpParams(const std::string& path, const Mesh& mesh, ParamStore<float>* store) {
  {
    std::ofstream out(rankFile(path, mesh.worldRank), std::ios::binary | std::ios::trunc);
    for (size_t i = 0; i < store->infos().size(); ++i) {
      const ParamInfo& p = store->info(static_cast<int>(i));
      int32_t h[6] = {static_cast<int32_t>(p.name.size()), p.fullRows, p.fullCols,
                      static_cast<int32_t>(p.split), p.parts, p.part};
      out.write(reinterpret_cast<const char*>(h), sizeof(h));
      out.write(p.name.data(), static_cast<std::streamsize>(p.name.size()));
      out.write(reinterpret_cast<const char*>(store->w(static_cast<int>(i))),
                static_cast<std::streamsize>(p.size * 4));
    }
    if (!out) return "cannot write " + rankFile(path, mesh.worldRank);
  }
  double done = 1;
  mesh.world.allReduce(&done, 1);
  if (mesh.worldRank != 0) return "";
  std::map<std::string, std::vector<float>> full;
  for (int r = 0; r < mesh.world.size(); ++r) {
    std::ifstream in(rankFile(path, r), std::ios::binary);
    int32_t h[6];
    while (in.read(reinterpret_cast<char*>(h), sizeof(h))) {
      std::string name(h[0], '\0');
      in.read(name.data(), h[0]);
      const int rows = h[1], cols = h[2], parts = h[4], part = h[5];
      const Split split = static_cast<Split>(h[3]);
      const int lr = split == Split::kRows ? rows / parts : rows;
      const int lc = split == Split::kCols ? cols / parts : cols;
      std::vector<float> local(static_cast<size_t>(lr) * lc);
      in.read(reinterpret_cast<char*>(local.data()), static_cast<std::streamsize>(local.size() * 4));
      std::vector<float>& f = full[name];
      f.resize(static_cast<size_t>(rows) * cols);
      const int r0 = split == Split::kRows ? part * lr : 0;
      const int c0 = split == Split::kCols ? part * lc : 0;
      for (int i = 0; i < lr; ++i) {
        for (int j = 0; j < lc; ++j) f[(r0 + i) * static_cast<size_t>(cols) + c0 + j] = local[i * lc + j];
      }
    }
    std::remove(rankFile(path, r).c_str());
  }
  std::ofstream out(path, std::ios::trunc);
  out.precision(9);
  for (const auto& [name, v] : full) {
    out << name << ' ' << v.size();
    for (float x : v) out << ' ' << x;
    out << '\n';
  }
  return out ? "" : "cannot write " + path;
}

namespace {

bool readLosses(const char* path, std::map<int, double>* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    const size_t s = line.find("\"step\":"), l = line.find("\"loss\":");
    if (s == std::string::npos || l == std::string::npos) continue;
    (*out)[std::atoi(line.c_str() + s + 7)] = std::strtod(line.c_str() + l + 7, nullptr);
  }
  return true;
}

double optionValue(int argc, char** argv, const char* name, double dflt) {
  for (int i = 0; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtod(argv[i + 1], nullptr);
  }
  return dflt;
}

}  // namespace

int compareLogs(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: braid-train compare a.jsonl b.jsonl [--rtol 1e-4]\n");
    return 2;
  }
  const double rtol = optionValue(argc, argv, "--rtol", 1e-4);
  std::map<int, double> a, b;
  if (!readLosses(argv[0], &a) || !readLosses(argv[1], &b)) {
    std::fprintf(stderr, "compare: cannot read %s or %s\n", argv[0], argv[1]);
    return 2;
  }
  int compared = 0, bad = 0;
  double worst = 0;
  for (const auto& [step, la] : a) {
    auto it = b.find(step);
    if (it == b.end()) continue;
    ++compared;
    const double rel = std::fabs(la - it->second) / std::max(std::fabs(it->second), 1e-30);
    worst = std::max(worst, rel);
    if (rel > rtol || (rtol == 0 && la != it->second)) {
      if (bad++ < 5) {
        std::printf("step %d: loss %.17g vs %.17g (relative difference %.3g > %.3g)\n", step, la,
                    it->second, rel, rtol);
      }
    }
  }
  std::printf("compare: %d common steps, largest relative loss difference %.3g, rtol %.3g: %s\n",
              compared, worst, rtol, compared > 0 && bad == 0 ? "equal" : "DIVERGED");
  return compared > 0 && bad == 0 ? 0 : 1;
}

int compareParams(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: braid-train compare-params a b [--atol 1e-4]\n");
    return 2;
  }
  const double atol = optionValue(argc, argv, "--atol", 1e-4);
  std::map<std::string, std::vector<double>> t[2];
  for (int f = 0; f < 2; ++f) {
    std::ifstream in(argv[f]);
    if (!in) {
      std::fprintf(stderr, "compare-params: cannot read %s\n", argv[f]);
      return 2;
    }
    std::string name;
    size_t n = 0;
    while (in >> name >> n) {
      std::vector<double>& v = t[f][name];
      v.resize(n);
      for (double& x : v) in >> x;
    }
  }
  double worst = 0;
  std::string where;
  bool ok = !t[0].empty() && t[0].size() == t[1].size();
  for (const auto& [name, va] : t[0]) {
    auto it = t[1].find(name);
    if (it == t[1].end() || it->second.size() != va.size()) {
      std::printf("compare-params: %s missing or of another size in %s\n", name.c_str(), argv[1]);
      ok = false;
      continue;
    }
    for (size_t i = 0; i < va.size(); ++i) {
      const double d = std::fabs(va[i] - it->second[i]);
      if (d > worst) {
        worst = d;
        where = name + "[" + std::to_string(i) + "]";
      }
    }
  }
  ok = ok && worst <= atol;
  std::printf("compare-params: %zu tensors, largest difference %.3g at %s, atol %.3g: %s\n",
              t[0].size(), worst, where.c_str(), atol, ok ? "equal" : "DIVERGED");
  return ok ? 0 : 1;
}

}  // namespace braid::train
