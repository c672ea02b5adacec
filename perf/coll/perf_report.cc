// The perf tools' table: see perf_report.h. Formats and widths are
// nccl-tests', so that scripts that parse its output parse ours.
#include "perf/coll/perf_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "perf/coll/perf_util.h"

namespace braid::perf {
namespace {

constexpr const char* kTimeFormat = "%Y-%m-%d %H:%M:%S";

std::string nowText() {
  char buf[64];
  std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof buf, kTimeFormat, std::localtime(&now));
  return buf;
}

std::string memoryText(double bytes) {
  const char* unit = " B";
  for (const char* u : {" KB", " MB", " GB"}) {
    if (std::fabs(bytes) < 1024.0) break;
    bytes /= 1024.0;
    unit = u;
  }
  const int decimals = std::fabs(bytes) < 10.0 ? 2 : std::fabs(bytes) < 100.0 ? 1 : 0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, bytes, unit);
  return buf;
}

void printPlacement(const PerfArgs& args, const Placement& p) {
  std::printf("  %7s  %6s  %6s", formatFloat(p.timeUs, 7).c_str(), formatFloat(p.algBw, 6).c_str(),
              formatFloat(p.busBw, 6).c_str());
  if (p.wrong < 0) {
    std::printf("    N/A");
  } else {
    std::printf("  %6g", static_cast<double>(p.wrong));
  }
  if (args.perIterTiming) {
    const IterReport& r = p.iters;
    std::printf("  %7s  %7s  %7s  %7s", formatFloat(r.minUs, 7).c_str(),
                formatFloat(r.maxUs, 7).c_str(), formatFloat(r.p99Us, 7).c_str(),
                formatFloat(r.cvPct, 7).c_str());
  }
}

}  // namespace

void computeIterStats(IterReport* r) {
  const size_t skip = std::min(static_cast<size_t>(std::max(r->skipped, 0)), r->timesUs.size());
  std::vector<double> t(r->timesUs.begin() + static_cast<long>(skip), r->timesUs.end());
  if (t.empty()) return;
  std::sort(t.begin(), t.end());
  const int n = static_cast<int>(t.size());
  auto pct = [&](int p) { return t[static_cast<size_t>(std::min(n - 1, (n * p + 99) / 100 - 1))]; };
  r->minUs = t.front();
  r->maxUs = t.back();
  r->p50Us = t[static_cast<size_t>(n / 2)];
  r->p95Us = pct(95);
  r->p99Us = pct(99);
  double sum = 0;
  for (double v : t) sum += v;
  r->avgUs = sum / n;
  double var = 0;
  for (double v : t) var += (v - r->avgUs) * (v - r->avgUs);
  r->stdevUs = std::sqrt(var / n);
  r->cvPct = r->avgUs > 0 ? r->stdevUs / r->avgUs * 100.0 : 0.0;
}

void printHeader(const RunInfo& run) {
  const PerfArgs& a = *run.args;
  int version = 0;
  (void)braidGetVersion(&version);
  std::printf("# Braid perf tools (nccl-tests' options and output) braid-library=%d\n", version);
  std::printf("# Collective test starting: %s\n", run.tool);
  const bool factor = a.stepFactor > 1;
  std::printf(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d unalign: %d\n",
      a.nThreads, a.nGpus, a.minBytes, a.maxBytes, factor ? a.stepFactor : a.stepBytes,
      factor ? "factor" : "bytes", a.warmupIters, a.iters, a.aggIters, a.check, a.graphLaunches,
      a.unalign);
  if (a.blocking == 1)
    std::printf("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  if (a.blocking == 2)
    std::printf("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
  if (a.blocking == 3) {
    std::printf(
        "# Blocking Enabled: wait and barrier after each outer iteration (-n); "
        "time excludes barrier \n");
  }
  if (a.perIterTiming) {
    std::printf("# Per-Iteration Report: host clock per iteration; i_* uses max over process rows");
    if (a.perIterSkip) std::printf("; summary skips first %d iterations", a.perIterSkip);
    std::printf(" \n");
  }
  if (a.parallelInit)
    std::printf("# Parallel Init Enabled: threads call into braidCommInitRank concurrently \n");
  std::printf("# Algorithm: %s\n", run.algorithm.c_str());
  if (!run.noEffect.empty())
    std::printf("# Accepted with no effect here: %s\n", run.noEffect.c_str());
  std::printf("#\n# Using devices\n");
  const char* where = a.deviceBuffers ? "cuda" : "host";
  const char* what = a.deviceBuffers ? "CUDA device memory" : "host memory";
  for (const RankInfo& r : run.ranks) {
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", r.rank, 0, r.pid,
                r.host.c_str(), r.device, where, what);
  }
  std::fflush(stdout);
}

void printColumnTitles(const PerfArgs& a) {
  const char* ts = a.reportTimestamps ? "timestamp" : "";
  const char* tsFormat = a.reportTimestamps ? kTimeFormat : "";
  const int tsPad = a.reportTimestamps ? 19 : 0;
  const char* time = a.reportCpuTime ? "cputime" : "time";
  std::printf("#\n");
  if (a.perIterTiming) {
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)"
        "                                in-place (+ per-iteration)\n",
        "", "", "", "", "");
    const char* fmt =
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  "
        "%6s  %6s  %6s  %7s  %7s  %7s  %7s %*s\n";
    std::printf(fmt, "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong",
                "i_min", "i_max", "i_p99", "i_cv%", time, "algbw", "busbw", "#wrong", "i_min",
                "i_max", "i_p99", "i_cv%", tsPad, ts);
    std::printf(fmt, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                "(us)", "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)",
                "(%)", tsPad, tsFormat);
  } else {
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
        "in-place          \n",
        "", "", "", "", "");
    const char* fmt = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n";
    std::printf(fmt, "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong",
                time, "algbw", "busbw", "#wrong", tsPad, ts);
    std::printf(fmt, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                "(GB/s)", "(GB/s)", "", tsPad, tsFormat);
  }
  std::fflush(stdout);
}

void printRow(const PerfCollective& coll, const PerfArgs& args, const Row& row) {
  const PerfCase& c = row.c;
  std::printf("%12zu  %12zu  %8s  %6s  %6d", c.sizes.rowBytes, c.sizes.rowCount,
              typeInfo(c.type).name, coll.hasOp ? opName(c.op) : "none",
              coll.hasRoot ? c.root : -1);
  printPlacement(args, row.out);
  printPlacement(args, row.in);
  if (args.reportTimestamps) std::printf("%21s", nowText().c_str());
  std::printf("\n");
  std::fflush(stdout);
}

void printFooter(const RunInfo& run) {
  std::printf("# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(run.wrong),
              run.wrong == 0 ? "OK" : "FAILED");
  std::printf("# %-20s : %g \n", "Avg bus bandwidth", run.avgBusBw);
  if (run.args->memoryReport) {
    std::string b = memoryText(static_cast<double>(run.bufferBytes));
    std::printf("# %-20s : Buffers %s | Total  %s\n",
                run.args->deviceBuffers ? "GPU memory usage" : "Host memory usage", b.c_str(),
                b.c_str());
  }
  std::printf("#\n# Collective test concluded: %s\n\n#\n", run.tool);
  std::fflush(stdout);
}

}  // namespace braid::perf
