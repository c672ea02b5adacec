// reduce_perf: nccl-tests' reduce_perf for Braid on host memory. Every rank's
// `count` elements are reduced into the root's recvbuff; S = count x element
// size. Only the root's output is defined, so only the root is checked.
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

void reduceFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

size_t reduceFillExpected(const PerfCase& c, void* expected) {
  if (c.rank != c.root) return 0;
  braid::perf::fillCheckReduced(c.type, c.op, c.nranks, expected, c.sizes.recvCount);
  return c.sizes.recvCount;
}

braidResult_t reduceRun(const PerfCase& c, const void* sendbuff, void* recvbuff, braidComm_t comm) {
  return braidReduce(sendbuff, recvbuff, c.sizes.paramCount, c.type, c.runOp, c.root, comm,
                     c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kReduce = {
      .name = "reduce_perf",
      .algoCollective = "reduce",
      .hasOp = true,
      .hasRoot = true,
      .busBwFactor = braid::perf::unitBusBwFactor,
      .getSizes = braid::perf::wholeBufferSizes,  // in place: sendbuff == recvbuff
      .fillInput = reduceFillInput,
      .fillExpected = reduceFillExpected,
      .run = reduceRun,
  };
  return braid::perf::perfMain(argc, argv, kReduce);
}
