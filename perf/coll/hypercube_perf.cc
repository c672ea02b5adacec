// hypercube_perf: nccl-tests' hypercube_perf for Braid: an all-gather of
// count elements per rank made of log2(nranks) rounds of send/recv, where in
// round k (mask = 2^k) each rank trades the mask blocks it has with rank ^ mask.
// algbw = count x element size x (nranks-1) / t (what each rank receives),
// busbw = algbw. Power-of-two rank counts only, as in nccl-tests.
#include "braid/braid.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace {

using braid::perf::PerfCase;

// Rank r's block holds elements r*count.. of one global sequence.
void hypercubeFillInput(const PerfCase& c, void* input) {
  const size_t count = c.sizes.paramCount;
  braid::perf::fillCheckInput(c.type, c.op, c.rank, c.nranks, input, count,
                              static_cast<size_t>(c.rank) * count);
}

size_t hypercubeFillExpected(const PerfCase& c, void* expected) {
  const size_t count = c.sizes.paramCount;
  for (int r = 0; r < c.nranks; ++r) {
    const size_t first = static_cast<size_t>(r) * count;
    braid::perf::fillCheckInput(c.type, c.op, r, c.nranks,
                                static_cast<char*>(expected) + first * c.elemSize, count, first);
  }
  return c.sizes.recvCount;
}

braidResult_t hypercubeRun(const PerfCase& c, const void* sendbuff, void* recvbuff,
                           braidComm_t comm) {
  char* rbuff = static_cast<char*>(recvbuff);
  const size_t count = c.sizes.paramCount;
  const size_t blockBytes = count * c.elemSize;
  char* own = rbuff + static_cast<size_t>(c.rank) * blockBytes;
  // Own block into place: a send to self (Braid copies it on the call's stream).
  if (own != sendbuff && count > 0) {
    braidResult_t r = braidGroupStart();
    if (r == braidSuccess) r = braidSend(sendbuff, count, c.type, c.rank, comm, c.stream);
    if (r == braidSuccess) r = braidRecv(own, count, c.type, c.rank, comm, c.stream);
    braidResult_t end = braidGroupEnd();
    if (r != braidSuccess || end != braidSuccess) return r != braidSuccess ? r : end;
  }
  for (int mask = 1; mask < c.nranks; mask <<= 1) {
    const int peer = c.rank ^ mask;
    const size_t mine = static_cast<size_t>(c.rank & ~(mask - 1));  // my mask blocks start here
    const size_t theirs = mine ^ static_cast<size_t>(mask);
    braidResult_t r = braidGroupStart();
    if (r == braidSuccess)
      r = braidSend(rbuff + mine * blockBytes, count * mask, c.type, peer, comm, c.stream);
    if (r == braidSuccess)
      r = braidRecv(rbuff + theirs * blockBytes, count * mask, c.type, peer, comm, c.stream);
    braidResult_t end = braidGroupEnd();
    if (r != braidSuccess || end != braidSuccess) return r != braidSuccess ? r : end;
  }
  return braidSuccess;
}

double hypercubeAlgBytes(const braid::perf::PerfSizes& s, size_t elemSize, int nranks) {
  return static_cast<double>(s.paramCount * elemSize) * (nranks - 1);
}

}  // namespace

int main(int argc, char** argv) {
  const braid::perf::PerfCollective kHypercube = {
      .name = "hypercube_perf",
      .algoCollective = nullptr,  // point to point: no algorithm to choose
      .hasOp = false,
      .hasRoot = false,
      .busBwFactor = braid::perf::unitBusBwFactor,
      .algBytes = hypercubeAlgBytes,
      .getSizes = braid::perf::hypercubeSizes,  // in place: sendbuff = recvbuff + rank*count
      .fillInput = hypercubeFillInput,
      .fillExpected = hypercubeFillExpected,
      .run = hypercubeRun,
      .checkInPlace = true,
      .groupable = false,  // each round's group needs the previous round's data
      .aggregatable = false,
      .powerOfTwoRanks = true,
  };
  return braid::perf::perfMain(argc, argv, kHypercube);
}
