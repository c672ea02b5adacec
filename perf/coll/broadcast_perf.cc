// broadcast_perf: nccl-tests' broadcast_perf for Braid on host memory.
// The root's `count` elements go to every rank; S = count x element size.
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

// Every rank fills its own data, so a rank that kept or sent its own instead
// of the root's shows.
void broadcastFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

size_t broadcastFillExpected(const PerfCase& c, void* expected) {
  braid::perf::fillCheckInput(c.type, c.op, c.root, c.nranks, expected, c.sizes.recvCount);
  return c.sizes.recvCount;
}

braidResult_t broadcastRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                           braidComm_t comm) {
  return braidBroadcast(sendbuff, recvbuff, c.sizes.paramCount, c.type, c.root, comm, c.stream);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kBroadcast = {
      .name = "broadcast_perf",
      .algoCollective = "broadcast",
      .hasOp = false,
      .hasRoot = true,
      .busBwFactor = braid::perf::unitBusBwFactor,
      .getSizes = braid::perf::wholeBufferSizes,  // in place: sendbuff == recvbuff
      .fillInput = broadcastFillInput,
      .fillExpected = broadcastFillExpected,
      .run = broadcastRun,
  };
  return braid::perf::perfMain(argc, argv, kBroadcast);
}
