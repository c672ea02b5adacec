// The harness of the nccl-tests-style perf tools (all_reduce_perf, ...).
//
// A tool describes its collective in a PerfCollective (sizes, bandwidth
// factor, check data, the call) and hands it to perfMain, which owns the rest:
// flags, the communicators (one per rank: processes x -t threads x -g ranks),
// buffers, the size x type x op loops, timing, combining times across ranks,
// the table and JSON on rank 0, the exit status. Only the public C API
// (braid/braid.h) is used.
//
// One perfMain per process; it runs a thread per -t, and the callbacks are
// called from those threads at once (they must keep no state).
#pragma once

#include <cstddef>

#include "braid/braid.h"

namespace braid::perf {

// Element counts of one row, for one rank. Offsets are in elements from the
// start of recvbuff (in-place placement).
struct PerfSizes {
  size_t sendCount = 0;          // elements the rank's send buffer holds
  size_t recvCount = 0;          // elements the rank's receive buffer holds
  size_t paramCount = 0;         // the count argument of the call
  size_t sendInplaceOffset = 0;  // in place: sendbuff = recvbuff + this
  size_t recvInplaceOffset = 0;  // in place: recvbuff = recvbuff + this
  size_t rowCount = 0;           // the table's "count" column
  size_t rowBytes = 0;           // the table's "size" column and S of algbw
};

// One row's parameters, as the collective's callbacks see them.
struct PerfCase {
  braidDataType_t type;
  braidRedOp_t op;  // braidSum for collectives without an op; kMulSum names mulsum
  int root;
  int rank;
  int nranks;
  size_t elemSize;
  PerfSizes sizes;
  braidRedOp_t runOp = braidSum;   // what the call passes: op, or mulsum's premul-sum op
  braidStream_t stream = nullptr;  // the rank's stream (NULL with -y 1)
};

// What a tool supplies. Callbacks must not fail except `run`.
struct PerfCollective {
  const char* name;  // "all_reduce_perf": the prefix of every error message
  // BRAID_ALGO's name of the collective ("allreduce"), which -A NAME turns
  // into BRAID_ALGO=allreduce:NAME; nullptr where there is no algorithm to
  // choose (sendrecv), and -A is refused.
  const char* algoCollective;
  bool hasOp;    // false: the op column prints "none" and -o is ignored
  bool hasRoot;  // false: the root column prints -1 and -r is ignored
  // busbw = algbw x busBwFactor(nranks).
  double (*busBwFactor)(int nranks);
  // S of algbw = S / t in bytes; nullptr: the row's size (sizes.rowBytes).
  double (*algBytes)(const PerfSizes& sizes, size_t elemSize, int nranks) = nullptr;
  // Counts for a row of `bytes` (already a multiple of elemSize).
  PerfSizes (*getSizes)(size_t bytes, size_t elemSize, int rank, int nranks);
  // Writes this rank's sendCount input elements to `input`.
  void (*fillInput)(const PerfCase& c, void* input);
  // Writes the expected recvCount results to `expected`; returns how many of
  // them, from the start of the receive region, are to be compared (0: none).
  size_t (*fillExpected)(const PerfCase& c, void* expected);
  // The call. sendbuff == recvbuff + sendInplaceOffset in place.
  braidResult_t (*run)(const PerfCase& c, const void* sendbuff, void* recvbuff, braidComm_t comm);
  // false: the in-place placement is timed but not checked (#wrong N/A), as
  // nccl-tests does for sendrecv, whose in-place send and receive share one
  // buffer (neither NCCL nor Braid defines what that yields).
  bool checkInPlace = true;
  // false: `run` is several groups that depend on each other (hypercube's
  // rounds), so its calls are never put inside one outer group: -m's calls
  // and a thread's -g ranks are issued one after the other (on streams).
  bool groupable = true;
  // false: -m's calls of one rank are issued one after the other, not in one
  // group, where their receives would land in one buffer at once (sendrecv:
  // Braid refuses a group whose receive buffers overlap).
  bool aggregatable = true;
  // true: runs only on a power-of-two number of ranks (hypercube), and says
  // so instead of rows on any other, as nccl-tests does.
  bool powerOfTwoRanks = false;
};

// Runs the tool; returns the process exit status (0: every value right).
// Exits 1 itself, after printing the error, when a Braid call fails.
int perfMain(int argc, char** argv, const PerfCollective& coll);

}  // namespace braid::perf
