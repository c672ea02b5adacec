// all_reduce_perf: nccl-tests' all_reduce_perf for Braid on host memory.
// Every rank sends and receives `count` elements; S = count x element size.
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

void allReduceFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

size_t allReduceFillExpected(const PerfCase& c, void* expected) {
  braid::perf::fillCheckReduced(c.type, c.op, c.nranks, expected, c.sizes.recvCount);
  return c.sizes.recvCount;
}

braidResult_t allReduceRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                           braidComm_t comm) {
  return braidAllReduce(sendbuff, recvbuff, c.sizes.paramCount, c.type, c.runOp, comm, c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kAllReduce = {
      .name = "all_reduce_perf",
      .algoCollective = "allreduce",
      .hasOp = true,
      .hasRoot = false,
      .busBwFactor = braid::perf::allReduceBusBwFactor,
      .getSizes = braid::perf::wholeBufferSizes,  // in place: sendbuff == recvbuff
      .fillInput = allReduceFillInput,
      .fillExpected = allReduceFillExpected,
      .run = allReduceRun,
  };
  return braid::perf::perfMain(argc, argv, kAllReduce);
}
