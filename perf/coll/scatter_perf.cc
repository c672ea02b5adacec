// scatter_perf: nccl-tests' scatter_perf for Braid on host memory. Block r
// (`count` elements) of the root's send array goes to rank r; S = the whole
// send array (count x nranks x element size).
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

// Every rank fills a send array of its own, so a rank that kept its own block
// instead of the root's shows.
void scatterFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

// Rank r gets elements r*count.. of the root's array.
size_t scatterFillExpected(const PerfCase& c, void* expected) {
  size_t count = c.sizes.paramCount;
  braid::perf::fillCheckInput(c.type, c.op, c.root, c.nranks, expected, count,
                              static_cast<size_t>(c.rank) * count);
  return count;
}

braidResult_t scatterRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                         braidComm_t comm) {
  return braidScatter(sendbuff, recvbuff, c.sizes.paramCount, c.type, c.root, comm, c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kScatter = {
      .name = "scatter_perf",
      .algoCollective = "scatter",
      .hasOp = false,
      .hasRoot = true,
      .busBwFactor = braid::perf::gatherBusBwFactor,
      .getSizes =
          braid::perf::scatterSizes,  // in place on the root: recvbuff = sendbuff + root*count
      .fillInput = scatterFillInput,
      .fillExpected = scatterFillExpected,
      .run = scatterRun,
  };
  return braid::perf::perfMain(argc, argv, kScatter);
}
