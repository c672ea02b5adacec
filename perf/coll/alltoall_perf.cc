// alltoall_perf: nccl-tests' alltoall_perf for Braid on host memory. Block p
// (`count` elements) of each rank's send array goes to rank p; S = the whole
// send array (count x nranks x element size).
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

void allToAllFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

// Block r of rank p's output is block p of rank r's input: elements p*count..
// of rank r's sequence.
size_t allToAllFillExpected(const PerfCase& c, void* expected) {
  size_t count = c.sizes.paramCount;
  for (int r = 0; r < c.nranks; ++r) {
    braid::perf::fillCheckInput(c.type, c.op, r, c.nranks,
                                static_cast<char*>(expected) + r * count * c.elemSize, count,
                                static_cast<size_t>(c.rank) * count);
  }
  return c.sizes.recvCount;
}

braidResult_t allToAllRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                          braidComm_t comm) {
  return braidAlltoAll(sendbuff, recvbuff, c.sizes.paramCount, c.type, comm, c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kAllToAll = {
      .name = "alltoall_perf",
      .algoCollective = "alltoall",
      .hasOp = false,
      .hasRoot = false,
      .busBwFactor = braid::perf::gatherBusBwFactor,
      .getSizes = braid::perf::allToAllSizes,  // in place: sendbuff == recvbuff
      .fillInput = allToAllFillInput,
      .fillExpected = allToAllFillExpected,
      .run = allToAllRun,
  };
  return braid::perf::perfMain(argc, argv, kAllToAll);
}
