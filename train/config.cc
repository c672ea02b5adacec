#include "train/config.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

namespace braid::train {

bool modelPreset(const std::string& name, ModelConfig* out) {
  ModelConfig m;
  m.name = name;
  if (name == "micro") {
    m.layers = 4;
    m.dModel = 32;
    m.heads = 4;
    m.seq = 16;
  } else if (name == "tiny") {
    m.dModel = 128;
  } else if (name == "small") {
    m.dModel = 256;
  } else {
    return false;
  }
  m.ff = 4 * m.dModel;
  *out = m;
  return true;
}

namespace {

bool parseInt(const std::string& s, long long* v) {
  char* end = nullptr;
  *v = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && *end == '\0';
}

bool parseDouble(const std::string& s, double* v) {
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

}  // namespace

namespace {

// Where each valued flag lands, for one TrainConfig being filled in.
struct Flags {
  std::map<std::string, int*> ints;
  std::map<std::string, double*> reals;
  std::map<std::string, std::string*> strs;
};

// Sets flag a to v; "" or the error.
std::string setFlag(const Flags& f, const std::string& a, const std::string& v, TrainConfig* c) {
  long long iv = 0;
  double dv = 0;
  if (auto it = f.ints.find(a); it != f.ints.end()) {
    if (!parseInt(v, &iv)) return a + " wants an integer, got '" + v + "'";
    *it->second = static_cast<int>(iv);
  } else if (auto rt = f.reals.find(a); rt != f.reals.end()) {
    if (!parseDouble(v, &dv)) return a + " wants a number, got '" + v + "'";
    *rt->second = dv;
  } else if (auto st = f.strs.find(a); st != f.strs.end()) {
    *st->second = v;
  } else if (a == "--seed") {
    if (!parseInt(v, &iv)) return "--seed wants an integer, got '" + v + "'";
    c->seed = static_cast<uint64_t>(iv);
  } else if (a == "--pp-schedule" && (v == "gpipe" || v == "1f1b")) {
    c->layout.schedule = v == "gpipe" ? PipeSchedule::kGpipe : PipeSchedule::kOneFOneB;
  } else if (a == "--pp-schedule") {
    return "--pp-schedule is gpipe or 1f1b, got '" + v + "'";
  } else {
    return "unknown option " + a + " (see braid-train --help)";
  }
  return "";
}

}  // namespace

bool parseTrainArgs(const std::vector<std::string>& args, TrainConfig* out, std::string* error) {
  TrainConfig c;
  std::string modelName = "tiny";
  bool moe = false;
  int experts = -1, topK = -1, moeEvery = -1;
  double cf = -1;
  const Flags flags{
      {{"--dp", &c.layout.dp},
       {"--tp", &c.layout.tp},
       {"--pp", &c.layout.pp},
       {"--ep", &c.layout.ep},
       {"--zero", &c.layout.zero},
       {"--micro-batches", &c.layout.microBatches},
       {"--global-batch", &c.globalBatch},
       {"--steps", &c.steps},
       {"--experts", &experts},
       {"--top-k", &topK},
       {"--moe-every", &moeEvery},
       {"--warmup", &c.optim.warmup},
       {"--log-every", &c.logEvery},
       {"--bucket-kb", &c.bucketKb}},
      {{"--lr", &c.optim.lr},
       {"--clip", &c.optim.clip},
       {"--weight-decay", &c.optim.weightDecay},
       {"--capacity-factor", &cf}},
      {{"--data", &c.data},
       {"--log-json", &c.logJson},
       {"--trace", &c.trace},
       {"--save", &c.save},
       {"--resume", &c.resume},
       {"--model", &modelName},
       {"--dump-params", &c.dumpParams}}};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--moe" || a == "--quiet") {
      (a == "--moe" ? moe : c.quiet) = true;
      continue;
    }
    if (i + 1 >= args.size()) {
      *error = "missing value after " + a;
      return false;
    }
    if (std::string e = setFlag(flags, a, args[++i], &c); !e.empty()) {
      *error = e;
      return false;
    }
  }
  if (!modelPreset(modelName, &c.model)) {
    *error = "--model is micro, tiny or small, got '" + modelName + "'";
    return false;
  }
  c.model.moe = moe || c.layout.ep > 1;
  if (experts > 0) c.model.experts = experts;
  if (topK > 0) c.model.topK = topK;
  if (moeEvery > 0) c.model.moeEvery = moeEvery;
  if (cf >= 0) c.model.capacityFactor = cf;
  *out = c;
  return true;
}

std::string validate(const TrainConfig& cfg, int worldSize) {
  const Layout& l = cfg.layout;
  const ModelConfig& m = cfg.model;
  std::ostringstream e;
  if (l.dp < 1 || l.tp < 1 || l.pp < 1 || l.ep < 1) {
    e << "--dp, --tp, --pp and --ep must be >= 1";
  } else if (l.world() != worldSize) {
    e << "dp x tp x pp x ep = " << l.dp << " x " << l.tp << " x " << l.pp << " x " << l.ep
      << " = " << l.world() << " but the job has " << worldSize
      << " ranks: make the product equal the rank count (braidrun -n)";
  } else if (m.heads % l.tp != 0) {
    e << "--tp " << l.tp << " must divide the " << m.heads << " attention heads of " << m.name;
  } else if (m.vocab % l.tp != 0 || m.ff % l.tp != 0) {
    e << "--tp " << l.tp << " must divide the vocabulary (" << m.vocab << ") and MLP width ("
      << m.ff << ")";
  } else if (m.layers % l.pp != 0) {
    e << "--pp " << l.pp << " must divide the " << m.layers << " layers of " << m.name;
  } else if (l.microBatches < 1) {
    e << "--micro-batches must be >= 1";
  } else if (cfg.globalBatch % (l.dataParallel() * l.microBatches) != 0) {
    e << "--global-batch " << cfg.globalBatch << " must be a multiple of dp x ep x micro-batches = "
      << l.dp << " x " << l.ep << " x " << l.microBatches << " = "
      << l.dataParallel() * l.microBatches;
  } else if (m.moe && (m.experts < 1 || m.experts % l.ep != 0)) {
    e << "--ep " << l.ep << " must divide --experts " << m.experts;
  } else if (m.moe && (m.topK < 1 || m.topK > m.experts)) {
    e << "--top-k " << m.topK << " must be between 1 and --experts " << m.experts;
  } else if (m.moe && m.moeEvery != 1 && m.moeEvery != 2) {
    e << "--moe-every is 1 (every layer) or 2 (every other layer)";
  } else if (l.zero != 0 && l.zero != 1) {
    e << "--zero is 0 or 1";
  } else if (cfg.steps < 0) {
    e << "--steps must be >= 0";
  } else if (cfg.bucketKb < 1) {
    e << "--bucket-kb must be >= 1";
  } else if (cfg.logEvery < 1) {
    e << "--log-every must be >= 1";
  }
  return e.str();
}

std::string layoutName(const Layout& l) {
  std::ostringstream s;
  s << "dp" << l.dp << ".tp" << l.tp << ".pp" << l.pp << ".ep" << l.ep << ".zero" << l.zero;
  if (l.pp > 1) s << "." << (l.schedule == PipeSchedule::kGpipe ? "gpipe" : "1f1b");
  s << ".mb" << l.microBatches;
  return s.str();
}

}  // namespace braid::train
