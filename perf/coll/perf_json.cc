// The perf tools' -J file: nccl-tests' JSON schema (file version 3), key for
// key, with its value conventions (booleans as the strings "true"/"false", the
// root as its %6i text, times in microseconds, bandwidths in GB/s). Braid's
// additions sit under "braid" keys, which nccl-tests' readers ignore.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "perf/coll/perf_report.h"
#include "perf/coll/perf_util.h"

extern char** environ;

namespace braid::perf {
namespace {

constexpr int kJsonFileVersion = 3;

std::string nowText() {
  char buf[64];
  std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return buf;
}

// A JSON text built in memory: values separated as they come.
class Json {
 public:
  Json& key(const char* k) {
    comma();
    quoted(k);
    out_ += ':';
    fresh_ = true;
    return *this;
  }
  Json& open(char c) {
    comma();
    out_ += c;
    fresh_ = true;
    return *this;
  }
  Json& close(char c) {
    out_ += c;
    fresh_ = false;
    return *this;
  }
  Json& str(const std::string& s) {
    comma();
    quoted(s);
    return *this;
  }
  Json& boolean(bool b) { return str(b ? "true" : "false"); }
  Json& num(long long v) { return raw(std::to_string(v)); }
  Json& num(double v) {
    if (std::isnan(v)) return str("nan");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lf", v);
    return raw(buf);
  }
  Json& null() { return raw("null"); }
  const std::string& text() const { return out_; }

 private:
  void quoted(const std::string& s) {
    out_ += '"';
    for (char ch : s) {
      if (ch == '"' || ch == '\\' || ch == '/') {
        out_ += '\\';
        out_ += ch;
      } else if (ch == '\n') {
        out_ += "\\n";
      } else if (ch == '\t') {
        out_ += "\\t";
      } else if (static_cast<unsigned char>(ch) >= 0x20 && static_cast<unsigned char>(ch) < 0x7f) {
        out_ += ch;
      }
    }
    out_ += '"';
  }
  Json& raw(const std::string& s) {
    comma();
    out_ += s;
    return *this;
  }
  void comma() {
    if (!fresh_ && !out_.empty()) out_ += ',';
    fresh_ = false;
  }
  std::string out_;
  bool fresh_ = true;
};

void writeConfig(Json& j, const RunInfo& run) {
  const PerfArgs& a = *run.args;
  j.key("config").open('{');
  j.key("nthreads").num(static_cast<long long>(a.nThreads));
  j.key("ngpus").num(static_cast<long long>(a.nGpus));
  j.key("minimum_bytes").num(static_cast<long long>(a.minBytes));
  j.key("maximum_bytes").num(static_cast<long long>(a.maxBytes));
  if (a.stepFactor > 1) {
    j.key("step_factor").num(static_cast<long long>(a.stepFactor));
  } else {
    j.key("step_bytes").num(static_cast<long long>(a.stepBytes));
  }
  j.key("warmup_iters").num(static_cast<long long>(a.warmupIters));
  j.key("iterations").num(static_cast<long long>(a.iters));
  j.key("aggregated_iterations").num(static_cast<long long>(a.aggIters));
  j.key("validation").num(static_cast<long long>(a.check));
  j.key("graph").num(static_cast<long long>(a.graphLaunches));
  j.key("blocking_collectives").boolean(a.blocking != 0);
  j.key("per_iter_timing").boolean(a.perIterTiming != 0);
  j.key("per_iter_skip").num(static_cast<long long>(a.perIterSkip));
  j.key("parallel_init").boolean(a.parallelInit != 0);
  j.key("devices").open('[');
  for (const RankInfo& r : run.ranks) {
    j.open('{');
    j.key("rank").num(static_cast<long long>(r.rank));
    j.key("group").num(0LL);
    j.key("pid").num(static_cast<long long>(r.pid));
    j.key("hostname").str(r.host);
    j.key("device").num(static_cast<long long>(r.device));
    j.key("device_hex").str(a.deviceBuffers ? "cuda" : "host");
    j.key("device_info").str(a.deviceBuffers ? "CUDA device memory" : "host memory");
    j.close('}');
  }
  j.close(']').close('}');
}

void writeIters(Json& j, const char* key, const IterReport& r) {
  j.key(key).open('{');
  j.key("skipped_iterations").num(static_cast<long long>(r.skipped));
  j.key("min_us").num(r.minUs);
  j.key("max_us").num(r.maxUs);
  j.key("avg_us").num(r.avgUs);
  j.key("p50_us").num(r.p50Us);
  j.key("p95_us").num(r.p95Us);
  j.key("p99_us").num(r.p99Us);
  j.key("stdev_us").num(r.stdevUs);
  j.key("cv_pct").num(r.cvPct);
  j.key("times_us").open('[');
  for (double t : r.timesUs) j.num(t);
  j.close(']');
  if (r.perProcessUs.size() > 1) {
    j.key("per_process_max_times_us").open('[');
    for (const std::vector<double>& row : r.perProcessUs) {
      j.open('[');
      for (double t : row) j.num(t);
      j.close(']');
    }
    j.close(']');
  }
  j.close('}');
}

void writePlacement(Json& j, const char* key, const Placement& p, bool cpuTime) {
  j.key(key).open('{');
  j.key(cpuTime ? "cpu_time" : "time").num(p.timeUs);
  j.key("alg_bw").num(p.algBw);
  j.key("bus_bw").num(p.busBw);
  j.key("nwrong");
  if (p.wrong < 0) {
    j.null();
  } else {
    j.num(static_cast<double>(p.wrong));
  }
  j.close('}');
}

void writeRow(Json& j, const PerfCollective& coll, const RunInfo& run, const Row& r) {
  char root[32];
  std::snprintf(root, sizeof root, "%6i", coll.hasRoot ? r.c.root : -1);
  j.open('{');
  j.key("size").num(static_cast<long long>(r.c.sizes.rowBytes));
  j.key("count").num(static_cast<long long>(r.c.sizes.rowCount));
  j.key("type").str(typeInfo(r.c.type).name);
  j.key("redop").str(coll.hasOp ? opName(r.c.op) : "none");
  j.key("root").str(root);
  const bool cpu = run.args->reportCpuTime != 0;
  writePlacement(j, "out_of_place", r.out, cpu);
  if (r.out.hasIters) writeIters(j, "out_of_place_per_iter", r.out.iters);
  writePlacement(j, "in_place", r.in, cpu);
  if (r.in.hasIters) writeIters(j, "in_place_per_iter", r.in.iters);
  j.key("actual_iterations").num(static_cast<long long>(run.args->iters));
  j.key("experiment_name").str("");
  j.key("braid").open('{');
  j.key("algorithm").str(r.algorithm);
  j.key("predicted_us").num(r.predictedUs);
  j.close('}');
  j.close('}');
}

}  // namespace

bool JsonReport::start(const std::string& path, int argc, char** argv) {
  // nccl-tests writes JSON only to a name ending in .json, and never over a file.
  const char* dot = std::strrchr(path.c_str(), '.');
  const char* slash = std::strrchr(path.c_str(), '/');
  if (dot == nullptr || (slash != nullptr && slash > dot) || strcasecmp(dot, ".json") != 0) {
    std::printf("# -J %s: not a .json name; no JSON written\n", path.c_str());
    return true;
  }
  std::string tryPath = path;
  for (int n = 0;; ++n) {
    int fd = ::open(tryPath.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      ::close(fd);
      break;
    }
    if (errno != EEXIST) {
      std::printf("# skipping json output; %s not accessible\n", tryPath.c_str());
      return false;
    }
    tryPath = path + "." + std::to_string(n);
  }
  std::printf("# Writing JSON output to %s\n", tryPath.c_str());
  path_ = tryPath;
  startTime_ = nowText();
  args_.assign(argv, argv + argc);
  return true;
}

bool JsonReport::finish(const PerfCollective& coll, const RunInfo& run,
                        const std::vector<Row>& rows) {
  if (path_.empty()) return true;
  int version = 0;
  (void)braidGetVersion(&version);
  Json j;
  j.open('{');
  j.key("version").num(static_cast<long long>(kJsonFileVersion));
  j.key("start_time").str(startTime_);
  j.key("args").open('[');
  for (const std::string& a : args_) j.str(a);
  j.close(']');
  j.key("env").open('[');
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    // The job's secret admits a process to its rendezvous: not for a results file.
    const bool secret = std::strncmp(*e, "BRAID_SECRET=", 13) == 0;
    j.str(secret ? std::string("BRAID_SECRET=<hidden>") : std::string(*e));
  }
  j.close(']');
  j.key("nccl_version").num(static_cast<long long>(version));
  writeConfig(j, run);
  j.key("results").open('[');
  for (const Row& r : rows) writeRow(j, coll, run, r);
  j.close(']');
  j.key("out_of_bounds").open('{');
  j.key("count").num(static_cast<long long>(run.wrong));
  j.key("okay").boolean(run.wrong == 0);
  j.close('}');
  j.key("average_bus_bandwidth").open('{');
  j.key("bandwidth").num(run.avgBusBw);
  j.key("okay").str("unchecked");
  j.close('}');
  j.key("errors").open('[').close(']');
  j.key("braid").open('{');
  j.key("tool").str(coll.name);
  j.key("algorithm").str(run.algorithm);
  j.key("no_effect").str(run.noEffect);
  j.close('}');
  j.key("end_time").str(nowText());
  j.close('}');
  FILE* f = std::fopen(path_.c_str(), "w");
  bool ok = f != nullptr && std::fputs(j.text().c_str(), f) >= 0 && std::fputc('\n', f) != EOF;
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::fprintf(stderr, "%s: rank 0: cannot write -J %s: %s\n", coll.name, path_.c_str(),
                 std::strerror(errno));
  }
  return ok;
}

}  // namespace braid::perf
