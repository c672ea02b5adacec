// The perf tools' table and JSON: see perf_report.h. Column widths follow
// nccl-tests so that scripts that parse its output parse ours.
#include "perf/coll/perf_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "perf/coll/perf_util.h"

namespace braid::perf {

void printColumnTitles() {
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place\n",
              "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int p = 0; p < 2; ++p)
    std::printf("  %7s  %6s  %6s %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (int p = 0; p < 2; ++p) std::printf("  %7s  %6s  %6s %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::printf("\n");
  std::fflush(stdout);
}

void printRow(const PerfCollective& coll, const Row& row) {
  const PerfCase& c = row.c;
  std::printf("%12zu  %12zu  %8s  %6s  %6d", c.sizes.rowBytes, c.sizes.rowCount,
              typeInfo(c.type).name, coll.hasOp ? opName(c.op) : "none",
              coll.hasRoot ? c.root : -1);
  for (const Placement* p : {&row.out, &row.in}) {
    std::string wrong = p->wrong < 0 ? "N/A" : std::to_string(p->wrong);
    std::printf("  %7s  %6.2f  %6.2f  %5s", formatTime(p->timeUs).c_str(), p->algBw, p->busBw,
                wrong.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
}

void printFooter(const RunSummary& run) {
  std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(run.wrong),
              run.wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %g \n#\n", run.avgBusBw);
  std::fflush(stdout);
}

namespace {

void writeJsonRow(FILE* f, const PerfCollective& coll, const Row& r) {
  std::fprintf(f,
               "{\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", "
               "\"root\": %d",
               r.c.sizes.rowBytes, r.c.sizes.rowCount, typeInfo(r.c.type).name,
               coll.hasOp ? opName(r.c.op) : "none", coll.hasRoot ? r.c.root : -1);
  for (const auto& [key, p] : {std::pair{"out_of_place", &r.out}, std::pair{"in_place", &r.in}}) {
    std::string wrong = p->wrong < 0 ? "null" : std::to_string(p->wrong);
    std::fprintf(f,
                 ", \"%s\": {\"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, "
                 "\"wrong\": %s}",
                 key, p->timeUs, p->algBw, p->busBw, wrong.c_str());
  }
  if (!r.algorithm.empty()) {
    std::fprintf(f, ", \"algorithm\": \"%s\", \"predicted_us\": %.3f", r.algorithm.c_str(),
                 r.predictedUs);
  }
  std::fprintf(f, "}");
}

// JSON string contents: -A's name is the only text from the user.
std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
  }
  return out;
}

}  // namespace

bool writeJson(const std::string& path, const PerfCollective& coll, const RunSummary& run,
               const std::vector<Row>& rows) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: rank 0: cannot write -J %s: %s\n", coll.name, path.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fprintf(f, "{\"tool\": \"%s\", \"nranks\": %d, \"algorithm\": \"%s\", \"results\": [",
               coll.name, run.nranks, jsonEscape(run.algorithm).c_str());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::fprintf(f, "%s\n  ", i ? "," : "");
    writeJsonRow(f, coll, rows[i]);
  }
  std::fprintf(f, "\n], \"out_of_bounds\": %lld, \"avg_busbw\": %.6f}\n",
               static_cast<long long>(run.wrong), run.avgBusBw);
  bool ok = std::ferror(f) == 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "%s: rank 0: error writing -J %s\n", coll.name, path.c_str());
  return ok;
}

}  // namespace braid::perf
