// reduce_scatter_perf: nccl-tests' reduce_scatter_perf for Braid on host
// memory. Each rank sends nranks blocks of `count` elements and receives its
// block of the reduction; S = the whole send array (count x nranks x element
// size).
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

void reduceScatterFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

// Rank r gets elements r*count.. of the all-reduce of every rank's input.
size_t reduceScatterFillExpected(const PerfCase& c, void* expected) {
  size_t count = c.sizes.paramCount;
  braid::perf::fillCheckReduced(c.type, c.op, c.nranks, expected, count,
                                static_cast<size_t>(c.rank) * count);
  return count;
}

braidResult_t reduceScatterRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                               braidComm_t comm) {
  return braidReduceScatter(sendbuff, recvbuff, c.sizes.paramCount, c.type, c.runOp, comm,
                            c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kReduceScatter = {
      .name = "reduce_scatter_perf",
      .algoCollective = "reducescatter",
      .hasOp = true,
      .hasRoot = false,
      .busBwFactor = braid::perf::gatherBusBwFactor,
      .getSizes = braid::perf::reduceScatterSizes,  // in place: recvbuff = sendbuff + rank*count
      .fillInput = reduceScatterFillInput,
      .fillExpected = reduceScatterFillExpected,
      .run = reduceScatterRun,
  };
  return braid::perf::perfMain(argc, argv, kReduceScatter);
}
