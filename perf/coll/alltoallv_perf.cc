// alltoallv_perf: nccl-tests' alltoallv_perf for Braid. Every rank sends
// count elements to each rank and receives as many from each (nccl-tests'
// pattern: equal counts, block p of the send array to rank p), through
// braidAlltoAllv; S = count x nranks x element size, busbw = algbw x
// (nranks-1)/nranks. As in nccl-tests the in-place columns are not checked.
#include <vector>

#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

// Rank r's send array holds elements 0.. of its own sequence.
void allToAllvFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

// Block r of this rank's output is block (this rank) of rank r's input.
size_t allToAllvFillExpected(const PerfCase& c, void* expected) {
  const size_t count = c.sizes.paramCount;
  for (int r = 0; r < c.nranks; ++r) {
    braid::perf::fillCheckInput(c.type, c.op, r, c.nranks,
                                static_cast<char*>(expected) + r * count * c.elemSize, count,
                                static_cast<size_t>(c.rank) * count);
  }
  return c.sizes.recvCount;
}

braidResult_t allToAllvRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                           braidComm_t comm) {
  const size_t n = static_cast<size_t>(c.nranks);
  std::vector<size_t> counts(n, c.sizes.paramCount), displs(n);
  for (size_t p = 0; p < n; ++p) displs[p] = p * c.sizes.paramCount;
  return braidAlltoAllv(sendbuff, counts.data(), displs.data(), recvbuff, counts.data(),
                        displs.data(), c.type, comm, c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kAllToAllv = {
      .name = "alltoallv_perf",
      .algoCollective = "alltoallv",
      .hasOp = false,
      .hasRoot = false,
      .busBwFactor = braid::perf::gatherBusBwFactor,
      .algBytes = nullptr,  // the row's size: count x nranks x element size
      .getSizes = braid::perf::allToAllvSizes,
      .fillInput = allToAllvFillInput,
      .fillExpected = allToAllvFillExpected,
      .run = allToAllvRun,
      .checkInPlace = false,  // nccl-tests: "We don't support in-place alltoallv"
  };
  return braid::perf::perfMain(argc, argv, kAllToAllv);
}
