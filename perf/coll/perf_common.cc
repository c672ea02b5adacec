// The perf harness: see perf_common.h. The shape follows nccl-tests'
// common.cu: per (type, op, size) row, each placement is checked, warmed up,
// fenced by a barrier and timed; times are combined across ranks per -a.
#include "perf/coll/perf_common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perf/coll/perf_args.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_util.h"

namespace braid::perf {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kHostSlot = 64;  // bytes per host name when gathering them

// This process's rank as the launcher announced it, for messages printed
// before the communicator exists; -1 when no launcher variable is set.
int launcherRank() {
  for (const char* var :
       {"BRAID_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return -1;
}

// A 64-byte aligned, touched host buffer, freed with its owner.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { std::free(data_); }

  bool allocate(size_t bytes) {
    void* p = nullptr;
    if (posix_memalign(&p, kAlign, std::max(bytes, kAlign)) != 0) return false;
    std::memset(p, 0, std::max(bytes, kAlign));  // fault the pages in before timing
    data_ = static_cast<char*>(p);
    return true;
  }
  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
};

struct Placement {
  double timeUs = 0.0;
  double algBw = 0.0;
  double busBw = 0.0;
  int64_t wrong = 0;  // summed over ranks; -1 when not checked
};

struct Row {
  PerfCase c;
  Placement out, in;
};

class Harness {
 public:
  Harness(const PerfCollective& coll, const PerfArgs& args) : coll_(coll), args_(args) {}
  ~Harness() {
    if (comm_ != nullptr) (void)braidCommDestroy(comm_);
  }

  int run();

 private:
  [[noreturn]] void fail(braidResult_t result) const;
  void check(braidResult_t result) const {
    if (result != braidSuccess) fail(result);
  }
  void init();
  void allocate();
  void printHeader();
  void printDevices();
  void runType(braidDataType_t type, braidRedOp_t op);
  Placement runPlacement(const PerfCase& c, bool inPlace);
  int64_t checkPlacement(const PerfCase& c, char* send, char* recv);
  double combineTime(double seconds);
  int64_t sumOverRanks(int64_t v);
  void barrier();
  void printRow(const Row& row) const;
  void printFooter() const;
  bool writeJson() const;
  size_t rowBytes(size_t bytes, size_t elemSize) const { return bytes / elemSize * elemSize; }

  const PerfCollective& coll_;
  const PerfArgs& args_;
  braidComm_t comm_ = nullptr;
  int rank_ = -1;
  int nranks_ = 0;
  std::vector<size_t> steps_;
  HostBuffer send_, recv_, expected_, scratch_;
  size_t recvBytes_ = 0;  // bytes of recv_ a row may touch, at most
  std::vector<Row> rows_;
  int64_t wrongTotal_ = 0;
  double busBwSum_ = 0.0;
  int busBwCount_ = 0;
};

void Harness::fail(braidResult_t result) const {
  int rank = rank_ >= 0 ? rank_ : launcherRank();
  std::string who = rank >= 0 ? std::to_string(rank) : std::string("?");
  std::fprintf(stderr, "%s: rank %s: %s: %s\n", coll_.name, who.c_str(),
               braidGetErrorString(result), braidGetLastError(comm_));
  std::fflush(stderr);
  std::exit(1);
}

void Harness::init() {
  if (args_.timeoutSec > 0.0) {
    std::string ms = std::to_string(static_cast<long long>(args_.timeoutSec * 1000.0 + 0.5));
    setenv("BRAID_TIMEOUT_MS", ms.c_str(), 1);
  }
  braidComm_t comm = nullptr;
  check(braidCommInitFromEnv(&comm, nullptr));
  comm_ = comm;
  check(braidCommUserRank(comm_, &rank_));
  check(braidCommCount(comm_, &nranks_));
}

// One buffer of each kind, sized for the largest row of any type, reused.
void Harness::allocate() {
  size_t sendBytes = 0, recvBytes = 0, expectedBytes = 0;
  for (braidDataType_t type : args_.types) {
    size_t es = typeInfo(type).size;
    for (size_t bytes : steps_) {
      PerfSizes s = coll_.getSizes(rowBytes(bytes, es), es, rank_, nranks_);
      sendBytes = std::max(sendBytes, s.sendCount * es);
      size_t recvElems = std::max(
          {s.recvCount, s.sendInplaceOffset + s.sendCount, s.recvInplaceOffset + s.recvCount});
      recvBytes = std::max(recvBytes, recvElems * es);
      expectedBytes = std::max(expectedBytes, s.recvCount * es);
    }
  }
  recvBytes_ = recvBytes;
  size_t scratch = static_cast<size_t>(nranks_) * kHostSlot;
  if (!send_.allocate(sendBytes) || !recv_.allocate(recvBytes) ||
      !expected_.allocate(args_.check > 0 ? expectedBytes : 0) ||
      !scratch_.allocate(std::max(scratch, static_cast<size_t>(nranks_) * sizeof(int32_t)))) {
    std::fprintf(stderr, "%s: rank %d: cannot allocate %zu + %zu bytes of host memory\n",
                 coll_.name, rank_, sendBytes, recvBytes);
    std::exit(1);
  }
}

void Harness::printHeader() {
  if (rank_ != 0) return;
  bool factor = args_.stepFactor > 1;
  std::printf(
      "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: 1 validation: %d graph: 0\n#\n",
      args_.minBytes, args_.maxBytes, factor ? args_.stepFactor : args_.stepBytes,
      factor ? "factor" : "bytes", args_.warmupIters, args_.iters, args_.check);
}

// Gathers every rank's pid and host name to rank 0 with sum all-reduces over
// buffers where each rank fills only its own slot (all-reduce is the one
// collective there is), then rank 0 lists them.
void Harness::printDevices() {
  std::vector<int32_t> pids(static_cast<size_t>(nranks_), 0);
  pids[static_cast<size_t>(rank_)] = static_cast<int32_t>(getpid());
  check(
      braidAllReduce(pids.data(), pids.data(), pids.size(), braidInt32, braidSum, comm_, nullptr));
  std::vector<uint8_t> hosts(static_cast<size_t>(nranks_) * kHostSlot, 0);
  char name[kHostSlot] = {};
  gethostname(name, kHostSlot - 1);
  std::memcpy(&hosts[static_cast<size_t>(rank_) * kHostSlot], name, kHostSlot - 1);
  check(braidAllReduce(hosts.data(), hosts.data(), hosts.size(), braidUint8, braidSum, comm_,
                       nullptr));
  if (rank_ != 0) return;
  std::printf("# Using devices\n");
  for (int r = 0; r < nranks_; ++r) {
    const char* host = reinterpret_cast<const char*>(&hosts[static_cast<size_t>(r) * kHostSlot]);
    std::printf("#  Rank %2d Group  0 Pid %6d on %10.*s device  0 [host memory]\n", r,
                pids[static_cast<size_t>(r)], static_cast<int>(kHostSlot - 1), host);
  }
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place\n",
              "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  for (int p = 0; p < 2; ++p)
    std::printf("  %7s  %6s  %6s %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("\n# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  for (int p = 0; p < 2; ++p) std::printf("  %7s  %6s  %6s %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::printf("\n");
  std::fflush(stdout);
}

void Harness::barrier() {
  auto* one = reinterpret_cast<int32_t*>(scratch_.data());
  *one = 1;
  check(braidAllReduce(one, one, 1, braidInt32, braidSum, comm_, nullptr));
}

int64_t Harness::sumOverRanks(int64_t v) {
  check(braidAllReduce(&v, &v, 1, braidInt64, braidSum, comm_, nullptr));
  return v;
}

// Combines this rank's seconds per call across ranks as -a asks.
double Harness::combineTime(double seconds) {
  double t = seconds;
  braidRedOp_t op = braidSum;
  switch (args_.average) {
    case AverageMode::kRankZero:
      t = rank_ == 0 ? seconds : 0.0;
      break;
    case AverageMode::kMean:
      break;
    case AverageMode::kMin:
      op = braidMin;
      break;
    case AverageMode::kMax:
      op = braidMax;
      break;
  }
  check(braidAllReduce(&t, &t, 1, braidFloat64, op, comm_, nullptr));
  if (args_.average == AverageMode::kMean) t /= nranks_;
  return t;
}

// Runs the call `check` times on fresh data; returns this rank's wrong elements.
int64_t Harness::checkPlacement(const PerfCase& c, char* send, char* recv) {
  int64_t wrong = 0;
  for (int k = 0; k < args_.check; ++k) {
    // Poison first, so that a stale result of an earlier row cannot pass.
    std::memset(recv_.data(), 0xa5, recvBytes_);
    coll_.fillInput(c, send);
    check(coll_.run(c, send, recv, comm_));
    size_t n = coll_.fillExpected(c, expected_.data());
    wrong += static_cast<int64_t>(countMismatches(c.type, recv, expected_.data(), n));
  }
  return wrong;
}

Placement Harness::runPlacement(const PerfCase& c, bool inPlace) {
  char* recv = recv_.data() + (inPlace ? c.sizes.recvInplaceOffset * c.elemSize : 0);
  char* send = inPlace ? recv_.data() + c.sizes.sendInplaceOffset * c.elemSize : send_.data();
  Placement p;
  p.wrong = args_.check > 0 ? sumOverRanks(checkPlacement(c, send, recv)) : -1;
  for (int i = 0; i < args_.warmupIters; ++i) check(coll_.run(c, send, recv, comm_));
  barrier();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < args_.iters; ++i) check(coll_.run(c, send, recv, comm_));
  auto t1 = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(t1 - t0).count() / args_.iters;
  double t = combineTime(seconds);
  p.timeUs = t * 1e6;
  p.algBw = algBandwidth(c.sizes.rowBytes, t);
  p.busBw = p.algBw * coll_.busBwFactor(nranks_);
  return p;
}

void Harness::runType(braidDataType_t type, braidRedOp_t op) {
  size_t es = typeInfo(type).size;
  for (size_t bytes : steps_) {
    Row row;
    row.c = PerfCase{type,
                     op,
                     args_.root,
                     rank_,
                     nranks_,
                     es,
                     coll_.getSizes(rowBytes(bytes, es), es, rank_, nranks_)};
    row.out = runPlacement(row.c, false);
    row.in = runPlacement(row.c, true);
    for (const Placement* p : {&row.out, &row.in}) {
      wrongTotal_ += std::max<int64_t>(p->wrong, 0);
      busBwSum_ += p->busBw;
      ++busBwCount_;
    }
    printRow(row);
    rows_.push_back(row);
  }
}

void Harness::printRow(const Row& row) const {
  if (rank_ != 0) return;
  const PerfCase& c = row.c;
  std::printf("%12zu  %12zu  %8s  %6s  %6d", c.sizes.rowBytes, c.sizes.rowCount,
              typeInfo(c.type).name, coll_.hasOp ? opName(c.op) : "none",
              coll_.hasRoot ? c.root : -1);
  for (const Placement* p : {&row.out, &row.in}) {
    std::string wrong = p->wrong < 0 ? "N/A" : std::to_string(p->wrong);
    std::printf("  %7s  %6.2f  %6.2f  %5s", formatTime(p->timeUs).c_str(), p->algBw, p->busBw,
                wrong.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
}

void Harness::printFooter() const {
  if (rank_ != 0) return;
  std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrongTotal_),
              wrongTotal_ == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %g \n#\n", busBwCount_ > 0 ? busBwSum_ / busBwCount_ : 0.0);
  std::fflush(stdout);
}

bool Harness::writeJson() const {
  if (rank_ != 0 || args_.jsonPath.empty()) return true;
  FILE* f = std::fopen(args_.jsonPath.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: rank 0: cannot write -J %s: %s\n", coll_.name, args_.jsonPath.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fprintf(f, "{\"tool\": \"%s\", \"nranks\": %d, \"results\": [", coll_.name, nranks_);
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    std::fprintf(f,
                 "%s\n  {\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", "
                 "\"root\": %d",
                 i ? "," : "", r.c.sizes.rowBytes, r.c.sizes.rowCount, typeInfo(r.c.type).name,
                 coll_.hasOp ? opName(r.c.op) : "none", coll_.hasRoot ? r.c.root : -1);
    for (const auto& [key, p] : {std::pair{"out_of_place", &r.out}, std::pair{"in_place", &r.in}}) {
      std::string wrong = p->wrong < 0 ? "null" : std::to_string(p->wrong);
      std::fprintf(f,
                   ", \"%s\": {\"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, "
                   "\"wrong\": %s}",
                   key, p->timeUs, p->algBw, p->busBw, wrong.c_str());
    }
    std::fprintf(f, "}");
  }
  std::fprintf(f, "\n], \"out_of_bounds\": %lld, \"avg_busbw\": %.6f}\n",
               static_cast<long long>(wrongTotal_),
               busBwCount_ > 0 ? busBwSum_ / busBwCount_ : 0.0);
  bool ok = std::ferror(f) == 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    std::fprintf(stderr, "%s: rank 0: error writing -J %s\n", coll_.name, args_.jsonPath.c_str());
  return ok;
}

int Harness::run() {
  init();
  if (coll_.hasRoot && args_.root >= nranks_) {
    if (rank_ == 0) {
      std::fprintf(stderr, "%s: -r %d: root must be below the number of ranks (%d)\n", coll_.name,
                   args_.root, nranks_);
    }
    return 1;
  }
  steps_ = sizeSteps(args_.minBytes, args_.maxBytes, args_.stepFactor, args_.stepBytes);
  allocate();
  printHeader();
  printDevices();
  std::vector<braidRedOp_t> ops = coll_.hasOp ? args_.ops : std::vector<braidRedOp_t>{braidSum};
  for (braidDataType_t type : args_.types) {
    for (braidRedOp_t op : ops) runType(type, op);
  }
  printFooter();
  bool jsonOk = writeJson();
  check(braidCommFinalize(comm_));
  check(braidCommDestroy(comm_));
  comm_ = nullptr;
  return wrongTotal_ == 0 && jsonOk ? 0 : 1;
}

}  // namespace

int perfMain(int argc, char** argv, const PerfCollective& coll) {
  PerfArgs args;
  std::string error;
  bool ok = parsePerfArgs(argc, argv, &args, &error);
  bool quiet = launcherRank() > 0;  // one copy of usage text, not one per rank
  if (!ok || args.help) {
    if (quiet) return ok ? 0 : 1;
    if (ok) {
      std::printf("usage: %s [flags]\n%s", coll.name, perfUsage());
    } else {
      std::fprintf(stderr, "%s: %s (see %s -h)\n", coll.name, error.c_str(), coll.name);
    }
    return ok ? 0 : 1;
  }
  Harness harness(coll, args);
  return harness.run();
}

}  // namespace braid::perf
