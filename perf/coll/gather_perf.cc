// gather_perf: nccl-tests' gather_perf for Braid on host memory. Each rank
// sends one block of `count` elements to the root, which receives nranks
// blocks; S = the gathered array (count x nranks x element size). Only the
// root's output is defined, so only the root is checked.
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

// Rank r's block holds elements r*count.. of a global sequence, so a block
// in the wrong place or from the wrong rank shows.
void gatherFillInput(const PerfCase& c, void* input) {
  size_t count = c.sizes.paramCount;
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, count,
                              static_cast<size_t>(c.rank) * count);
}

size_t gatherFillExpected(const PerfCase& c, void* expected) {
  if (c.rank != c.root) return 0;
  size_t count = c.sizes.paramCount;
  for (int r = 0; r < c.nranks; ++r) {
    size_t first = static_cast<size_t>(r) * count;
    braid::perf::fillCheckInput(c.type, c.op, r, c.nranks,
                                static_cast<char*>(expected) + first * c.elemSize, count, first);
  }
  return c.sizes.recvCount;
}

braidResult_t gatherRun(const PerfCase& c, const void* sendbuff, void* recvbuff, braidComm_t comm) {
  return braidGather(sendbuff, recvbuff, c.sizes.paramCount, c.type, c.root, comm, c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kGather = {
      .name = "gather_perf",
      .algoCollective = "gather",
      .hasOp = false,
      .hasRoot = true,
      .busBwFactor = braid::perf::gatherBusBwFactor,
      .getSizes =
          braid::perf::gatherSizes,  // in place on the root: sendbuff = recvbuff + root*count
      .fillInput = gatherFillInput,
      .fillExpected = gatherFillExpected,
      .run = gatherRun,
  };
  return braid::perf::perfMain(argc, argv, kGather);
}
