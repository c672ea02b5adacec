// The perf tools' report: the table on stdout and the -J JSON file, which rank
// 0 writes from the rows the harness measured. Internal to the harness
// (perf_common.cc). Not thread-safe: writes stdout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/coll/perf_common.h"

namespace braid::perf {

// One placement (out of place or in place) of one row.
struct Placement {
  double timeUs = 0.0;
  double algBw = 0.0;
  double busBw = 0.0;
  int64_t wrong = 0;  // summed over ranks; -1 when not checked
};

struct Row {
  PerfCase c;
  Placement out, in;
  // What braidCommGetAlgorithm says the call runs ("" for send/recv), and
  // the cost model's predicted time.
  std::string algorithm;
  double predictedUs = 0.0;
};

// What the report says besides the rows.
struct RunSummary {
  int nranks = 0;
  std::string algorithm;  // "default", or -A's name
  int64_t wrong = 0;      // over every row, placement and rank
  double avgBusBw = 0.0;  // mean busbw over every row and placement
};

// The "# Using devices"-style column titles (two lines).
void printColumnTitles();
void printRow(const PerfCollective& coll, const Row& row);
void printFooter(const RunSummary& run);
// Writes `path`; false, after saying why on stderr, when it cannot.
bool writeJson(const std::string& path, const PerfCollective& coll, const RunSummary& run,
               const std::vector<Row>& rows);

}  // namespace braid::perf
