// One thread of a perf run (nccl-tests' threadArgs): it drives -g ranks, each
// with its own communicator, stream and buffers, through the type x op x size
// loops, issuing the ranks' calls together in one group. The thread holding
// global rank 0 prints the table and keeps the rows for -J. Used by one thread.
#pragma once

#include <memory>
#include <vector>

#include "perf/coll/perf_args.h"
#include "perf/coll/perf_buffers.h"
#include "perf/coll/perf_common.h"
#include "perf/coll/perf_report.h"
#include "perf/coll/perf_world.h"

namespace braid::perf {

class PerfWorker {
 public:
  // `json` is rank 0's file (nullptr elsewhere or without -J).
  PerfWorker(const PerfCollective& coll, const PerfArgs& args, PerfWorld* world, int thread,
             JsonReport* json);
  ~PerfWorker();
  PerfWorker(const PerfWorker&) = delete;
  PerfWorker& operator=(const PerfWorker&) = delete;

  // Runs every row; the process exit status (0: every value right). Exits the
  // process itself, after printing why, when a Braid call fails.
  int run();

 private:
  struct Rank {
    braidComm_t comm = nullptr;
    int rank = 0;
    int local = 0;  // index in this process
    braidStream_t stream = nullptr;
    HostBuffer send, recv, expected;
    DeviceBuffer dsend, drecv;
    size_t recvBytes = 0;  // bytes of the receive buffer a row may touch, at most
    PerfCase c{};
    char* sendPtr = nullptr;  // the placement's buffers
    char* recvPtr = nullptr;
  };

  [[noreturn]] void fail(braidResult_t result, braidComm_t comm) const;
  void check(braidResult_t result, braidComm_t comm) const {
    if (result != braidSuccess) fail(result, comm);
  }
  [[noreturn]] void die(const char* what) const;
  bool holdsRankZero() const { return ranks_.front()->rank == 0; }
  void setUp();
  void allocate(const std::vector<size_t>& steps);
  void gatherRankInfo();
  void runType(braidDataType_t type, braidRedOp_t op, const std::vector<size_t>& steps);
  void runRow(braidDataType_t type, braidRedOp_t op, size_t bytes);
  Placement runPlacement(bool inPlace);
  void place(Rank& r, bool inPlace);
  int64_t checkRank(Rank& r);
  int64_t checkOnDevice(Rank& r);
  // Seconds per call of the timed loop (its time, or with -C the time to issue
  // it); with -I, *iterSeconds gets each iteration's.
  double timeCalls(std::vector<double>* iterSeconds);
  double timeGraph();
  void issueOne();
  void issueIteration();
  void syncAll();
  void barrier();
  int64_t sumOverRanks(int64_t v);
  double combineTime(double seconds);
  IterReport combineIters(const std::vector<double>& iterSeconds);
  void useDevice(const Rank& r) const;

  const PerfCollective& coll_;
  const PerfArgs& args_;
  PerfWorld* world_;
  int thread_;
  JsonReport* json_;
  int nranks_ = 0;
  std::vector<std::unique_ptr<Rank>> ranks_;
  RunInfo info_;  // rank 0's
  std::vector<Row> rows_;
  int64_t wrongTotal_ = 0;    // wrong elements over every row, placement and rank
  int64_t failedChecks_ = 0;  // this thread's placements with a wrong element
  double busBwSum_ = 0.0;
  int busBwCount_ = 0;
};

}  // namespace braid::perf
