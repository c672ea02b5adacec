// sendrecv_perf: nccl-tests' sendrecv_perf for Braid. In one group each rank sends
// `count` elements to rank+1 and receives as many from rank-1 (a ring exchange); S =
// count x element size. In place, as in nccl-tests, sendbuff == recvbuff: Braid's sends
// carry their buffers as they were before the group (the receive lands after them), so
// that row is checked too, where nccl-tests leaves it unchecked.
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

void sendRecvFillInput(const PerfCase& c, void* input) {
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, c.sizes.sendCount);
}

size_t sendRecvFillExpected(const PerfCase& c, void* expected) {
  int prev = (c.rank + c.nranks - 1) % c.nranks;
  braid::perf::fillCheckInput(c.type, c.op, prev, c.nranks, expected, c.sizes.recvCount);
  return c.sizes.recvCount;
}

braidResult_t sendRecvRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                          braidComm_t comm) {
  int next = (c.rank + 1) % c.nranks;
  int prev = (c.rank + c.nranks - 1) % c.nranks;
  size_t count = c.sizes.paramCount;
  braidResult_t r = braidGroupStart();
  if (r != braidSuccess) return r;
  r = braidSend(sendbuff, count, c.type, next, comm, c.stream);
  if (r == braidSuccess) r = braidRecv(recvbuff, count, c.type, prev, comm, c.stream);
  braidResult_t end = braidGroupEnd();  // always, so the group does not stay open
  return r != braidSuccess ? r : end;
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kSendRecv = {
      .name = "sendrecv_perf",
      .algoCollective = nullptr,  // point to point: no algorithm to choose
      .hasOp = false,
      .hasRoot = false,
      .busBwFactor = braid::perf::unitBusBwFactor,
      .getSizes = braid::perf::wholeBufferSizes,  // in place: sendbuff == recvbuff
      .fillInput = sendRecvFillInput,
      .fillExpected = sendRecvFillExpected,
      .run = sendRecvRun,
      .checkInPlace = true,  // nccl-tests does not check it (NCCL defines no result)
      .aggregatable = false,  // -m's receives would share one buffer in one group
  };
  return braid::perf::perfMain(argc, argv, kSendRecv);
}
