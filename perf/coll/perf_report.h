// The perf tools' report: the table on stdout (nccl-tests' layout, column for
// column) and the -J JSON file (nccl-tests' schema, file version 3), both
// written by global rank 0 from the rows the harness measured. Internal to the
// harness. Not thread-safe: one thread (rank 0's) writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/coll/perf_args.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_world.h"

namespace braid::perf {

// -I 1: one placement's iterations, each the max over ranks of the time per call.
struct IterReport {
  int skipped = 0;  // -K: left out of the statistics, not out of timesUs
  double minUs = 0, maxUs = 0, avgUs = 0, p50Us = 0, p95Us = 0, p99Us = 0, stdevUs = 0;
  double cvPct = 0;
  std::vector<double> timesUs;                    // per iteration, max over every rank
  std::vector<std::vector<double>> perProcessUs;  // per process, per iteration
};

// Statistics of timesUs[skip..] (nccl-tests' percentiles: the ceil(n*p/100)-th).
void computeIterStats(IterReport* r);

// One placement (out of place or in place) of one row.
struct Placement {
  double timeUs = 0.0;  // or the time to issue the calls, with -C 1
  double algBw = 0.0;
  double busBw = 0.0;
  int64_t wrong = 0;  // summed over ranks; -1 when not checked
  bool hasIters = false;
  IterReport iters;
};

struct Row {
  PerfCase c;
  Placement out, in;
  // What braidCommGetAlgorithm says the call runs ("" for send/recv), and
  // the cost model's predicted time.
  std::string algorithm;
  double predictedUs = 0.0;
};

// One rank's line of "# Using devices".
struct RankInfo {
  int rank = 0;
  int pid = 0;
  std::string host;
  int device = 0;  // the rank's index in its process (its CUDA device with -E 1)
};

// What the report says besides the rows.
struct RunInfo {
  const char* tool = "";
  const PerfArgs* args = nullptr;
  PerfLayout layout;
  std::string algorithm;  // "default", or -A's name
  std::string noEffect;   // the options accepted that change nothing here
  std::vector<RankInfo> ranks;
  int64_t wrong = 0;       // over every row, placement and rank
  double avgBusBw = 0.0;   // mean busbw over every row and placement
  size_t bufferBytes = 0;  // -M: one rank's buffers
};

void printHeader(const RunInfo& run);
void printColumnTitles(const PerfArgs& args);
void printRow(const PerfCollective& coll, const PerfArgs& args, const Row& row);
void printFooter(const RunInfo& run);

// -J: the JSON file. start() picks the file as nccl-tests does (never over an
// existing one: path.0, path.1, ...) and says so on stdout; finish() writes
// everything. Both false, after saying why, when the file cannot be written.
class JsonReport {
 public:
  bool start(const std::string& path, int argc, char** argv);
  bool finish(const PerfCollective& coll, const RunInfo& run, const std::vector<Row>& rows);

 private:
  std::string path_;
  std::string startTime_;
  std::vector<std::string> args_;
};

}  // namespace braid::perf
