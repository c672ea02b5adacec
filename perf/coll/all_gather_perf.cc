// all_gather_perf: nccl-tests' all_gather_perf for Braid on host memory.
// Each rank sends one block of `count` elements and receives nranks blocks;
// S = the gathered array (count x nranks x element size).
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

// Rank r's block holds elements r*count.. of a global sequence, so a block
// in the wrong place or from the wrong rank shows.
void allGatherFillInput(const PerfCase& c, void* input) {
  size_t count = c.sizes.paramCount;
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, count,
                              static_cast<size_t>(c.rank) * count);
}

size_t allGatherFillExpected(const PerfCase& c, void* expected) {
  size_t count = c.sizes.paramCount;
  for (int r = 0; r < c.nranks; ++r) {
    size_t first = static_cast<size_t>(r) * count;
    braid::perf::fillCheckInput(c.type, c.op, r, c.nranks,
                                static_cast<char*>(expected) + first * c.elemSize, count, first);
  }
  return c.sizes.recvCount;
}

braidResult_t allGatherRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                           braidComm_t comm) {
  return braidAllGather(sendbuff, recvbuff, c.sizes.paramCount, c.type, comm, c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kAllGather = {
      .name = "all_gather_perf",
      .algoCollective = "allgather",
      .hasOp = false,
      .hasRoot = false,
      .busBwFactor = braid::perf::gatherBusBwFactor,
      .getSizes = braid::perf::allGatherSizes,  // in place: sendbuff = recvbuff + rank*count
      .fillInput = allGatherFillInput,
      .fillExpected = allGatherFillExpected,
      .run = allGatherRun,
  };
  return braid::perf::perfMain(argc, argv, kAllGather);
}
