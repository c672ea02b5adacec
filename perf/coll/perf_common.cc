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
#include "perf/coll/perf_report.h"
#include "perf/coll/perf_util.h"

#ifdef BRAID_PERF_CUDA
#include <cuda_runtime.h>
#endif

namespace braid::perf {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kPage = 4096;
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

// A 64-byte aligned, touched host buffer, freed with its owner; from
// braidMemAlloc when `shared`; registered with `registerWith` when that is not
// null (its registration ends with the communicator, before the buffer is freed).
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() {
    if (shared_) {
      (void)braidMemFree(data_);
    } else {
      std::free(data_);
    }
  }

  bool allocate(size_t bytes, bool shared = false, braidComm_t registerWith = nullptr) {
    void* p = nullptr;
    shared_ = shared;
    if (shared) {
      if (braidMemAlloc(&p, std::max(bytes, kAlign)) != braidSuccess) return false;
    } else if (registerWith != nullptr) {
      // Whole pages: braidCommRegister shares only those (runtime/shared_memory.cc).
      bytes = (std::max(bytes, kAlign) + kPage - 1) / kPage * kPage;
      if (posix_memalign(&p, kPage, bytes) != 0) return false;
    } else if (posix_memalign(&p, kAlign, std::max(bytes, kAlign)) != 0) {
      return false;
    }
    std::memset(p, 0, std::max(bytes, kAlign));  // fault the pages in before timing
    data_ = static_cast<char*>(p);
    void* registration = nullptr;
    return registerWith == nullptr ||
           braidCommRegister(registerWith, p, bytes, &registration) == braidSuccess;
  }
  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
  bool shared_ = false;
};

braidStream_t gStream = nullptr;  // -D 1: a CUDA stream (DeviceBuffer::createStream)

// -D 1: a CUDA device buffer with a host mirror that inputs are filled in and results
// checked in; copies between the two are outside the timed loop.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
#ifdef BRAID_PERF_CUDA
  ~DeviceBuffer() {
    if (data_ != nullptr) (void)cudaFree(data_);
  }
  // False with *error set when there is no device or no memory.
  bool allocate(size_t bytes, std::string* error) {
    bytes_ = std::max(bytes, kAlign);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes_);
    if (err == cudaSuccess) err = cudaMemset(p, 0, bytes_);
    if (err != cudaSuccess) {
      *error = std::string("cudaMalloc/cudaMemset: ") + cudaGetErrorString(err);
      return false;
    }
    data_ = static_cast<char*>(p);
    return mirror_.allocate(bytes_);
  }
  static bool toDevice(char* dst, const char* src, size_t n) {
    return cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) == cudaSuccess;
  }
  static bool toHost(char* dst, const char* src, size_t n) {
    return cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  static bool synchronize() { return cudaDeviceSynchronize() == cudaSuccess; }
  // The CUDA stream the calls run on (as nccl-tests gives each GPU one): they are enqueued
  // and return at once; the timed loop ends with a device synchronisation. A blocking
  // stream, so the checks' cudaMemcpy (legacy stream) stay ordered with it.
  static braidStream_t createStream() {
    cudaStream_t s = nullptr;
    return cudaStreamCreate(&s) == cudaSuccess ? reinterpret_cast<braidStream_t>(s) : nullptr;
  }
  // -G: the calls `enqueue` makes on `stream`, captured into a graph (global mode, as
  // torch.cuda.graph captures) and instantiated; nullptr when CUDA refuses.
  template <typename Fn>
  static void* capture(braidStream_t stream, Fn enqueue) {
    auto s = reinterpret_cast<cudaStream_t>(stream);
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) return nullptr;
    enqueue();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaStreamEndCapture(s, &graph) != cudaSuccess) return nullptr;
    const bool made = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    (void)cudaGraphDestroy(graph);
    return made ? exec : nullptr;
  }
  static bool launch(void* graph, braidStream_t stream) {
    return cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph),
                           reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
  }
  static void destroyGraph(void* graph) {
    (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
  }
#else
  bool allocate(size_t, std::string* error) {
    *error = "this build has no CUDA (configure with nvcc found)";
    return false;
  }
  static bool toDevice(char*, const char*, size_t) { return false; }
  static bool toHost(char*, const char*, size_t) { return false; }
  static bool synchronize() { return true; }
  static braidStream_t createStream() { return nullptr; }
  template <typename Fn>
  static void* capture(braidStream_t, Fn) {
    return nullptr;
  }
  static bool launch(void*, braidStream_t) { return false; }
  static void destroyGraph(void*) {}
#endif
  char* data() const { return data_; }
  char* mirror() const { return mirror_.data(); }
  size_t bytes() const { return bytes_; }
  bool contains(const char* p) const {
    return data_ != nullptr && p >= data_ && p < data_ + bytes_;
  }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
  HostBuffer mirror_;
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
  // Fills row.algorithm and row.predictedUs from braidCommGetAlgorithm.
  void whichAlgorithm(Row& row) const;
  Placement runPlacement(const PerfCase& c, bool inPlace);
  // Seconds per call: `iters` calls timed (after a barrier), or (-G) the calls captured
  // into a CUDA graph and its launches timed.
  double timeCalls(const PerfCase& c, char* send, char* recv, int iters);
  double timeGraph(const PerfCase& c, char* send, char* recv);
  void synchronizeDevice() const;
  int64_t checkPlacement(const PerfCase& c, char* send, char* recv);
  int64_t checkOnDevice(const PerfCase& c, char* send, char* recv);
  double combineTime(double seconds);
  int64_t sumOverRanks(int64_t v);
  void barrier();
  RunSummary summary() const;
  size_t rowBytes(size_t bytes, size_t elemSize) const { return bytes / elemSize * elemSize; }

  const PerfCollective& coll_;
  const PerfArgs& args_;
  braidComm_t comm_ = nullptr;
  int rank_ = -1;
  int nranks_ = 0;
  std::vector<size_t> steps_;
  HostBuffer send_, recv_, expected_, scratch_;
  DeviceBuffer deviceSend_, deviceRecv_;  // -D 1: what the calls run on
  size_t recvBytes_ = 0;                  // bytes of recv_ a row may touch, at most
  std::vector<Row> rows_;
  std::string algorithm_;  // for the header: "default" or -A's name
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
  // Before the communicator: it reads BRAID_ALGO once, at init.
  if (!args_.algo.empty())
    setenv("BRAID_ALGO", algoSpec(coll_.algoCollective, args_.algo).c_str(), 1);
  algorithm_ = algoLabel(args_.algo, std::getenv("BRAID_ALGO"));
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
  if (args_.device != 0) {
    std::string error;
    if (!deviceSend_.allocate(sendBytes, &error) || !deviceRecv_.allocate(recvBytes, &error)) {
      std::fprintf(stderr, "%s: rank %d: -D 1: cannot allocate device memory: %s\n", coll_.name,
                   rank_, error.c_str());
      std::exit(1);
    }
    gStream = DeviceBuffer::createStream();
    // A device collective first (a barrier on the stream) sets up the device windows,
    // which send/recv use only once a collective has made them.
    check(braidBarrier(comm_, gStream));
    if (!DeviceBuffer::synchronize()) std::exit(1);
  }
  const bool host = args_.device == 0;  // with -D 1 the calls run on the device buffers
  braidComm_t registerWith = args_.memAlloc == 2 ? comm_ : nullptr;
  if (!send_.allocate(host ? sendBytes : 0, args_.memAlloc == 1, registerWith) ||
      !recv_.allocate(host ? recvBytes : 0, args_.memAlloc == 1, registerWith) ||
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
      "agg iters: 1 validation: %d graph: %d\n",
      args_.minBytes, args_.maxBytes, factor ? args_.stepFactor : args_.stepBytes,
      factor ? "factor" : "bytes", args_.warmupIters, args_.iters, args_.check,
      args_.graphLaunches);
  std::printf("# Algorithm: %s\n#\n", algorithm_.c_str());
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
    std::printf("#  Rank %2d Group  0 Pid %6d on %10.*s device  0 [%s memory]\n", r,
                pids[static_cast<size_t>(r)], static_cast<int>(kHostSlot - 1), host,
                args_.device != 0 ? "CUDA device" : "host");
  }
  std::printf("#\n");
  printColumnTitles();
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
  if (args_.device != 0) return checkOnDevice(c, send, recv);
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

// checkPlacement on device buffers: inputs are made in the host mirrors and copied over
// whole (an in-place send lies inside the receive buffer), results copied back.
int64_t Harness::checkOnDevice(const PerfCase& c, char* send, char* recv) {
  auto mirrorOf = [](const DeviceBuffer& b, char* p) { return b.mirror() + (p - b.data()); };
  const DeviceBuffer& sendOwner = deviceRecv_.contains(send) ? deviceRecv_ : deviceSend_;
  int64_t wrong = 0;
  for (int k = 0; k < args_.check; ++k) {
    std::memset(deviceRecv_.mirror(), 0xa5, recvBytes_);
    coll_.fillInput(c, mirrorOf(sendOwner, send));
    if (!DeviceBuffer::toDevice(deviceSend_.data(), deviceSend_.mirror(), deviceSend_.bytes()) ||
        !DeviceBuffer::toDevice(deviceRecv_.data(), deviceRecv_.mirror(), deviceRecv_.bytes())) {
      std::fprintf(stderr, "%s: rank %d: copy to the device failed\n", coll_.name, rank_);
      std::exit(1);
    }
    check(coll_.run(c, send, recv, comm_));
    if (!DeviceBuffer::toHost(deviceRecv_.mirror(), deviceRecv_.data(), recvBytes_)) {
      std::fprintf(stderr, "%s: rank %d: copy from the device failed\n", coll_.name, rank_);
      std::exit(1);
    }
    size_t n = coll_.fillExpected(c, expected_.data());
    wrong += static_cast<int64_t>(
        countMismatches(c.type, mirrorOf(deviceRecv_, recv), expected_.data(), n));
  }
  return wrong;
}

Placement Harness::runPlacement(const PerfCase& c, bool inPlace) {
  const bool dev = args_.device != 0;
  char* recvBase = dev ? deviceRecv_.data() : recv_.data();
  char* recv = recvBase + (inPlace ? c.sizes.recvInplaceOffset * c.elemSize : 0);
  char* send = inPlace ? recvBase + c.sizes.sendInplaceOffset * c.elemSize
                       : (dev ? deviceSend_.data() : send_.data());
  Placement p;
  bool checked = args_.check > 0 && (!inPlace || coll_.checkInPlace);
  p.wrong = checked ? sumOverRanks(checkPlacement(c, send, recv)) : -1;
  for (int i = 0; i < args_.warmupIters; ++i) check(coll_.run(c, send, recv, comm_));
  const double seconds =
      args_.graphLaunches > 0 ? timeGraph(c, send, recv) : timeCalls(c, send, recv, args_.iters);
  double t = combineTime(seconds);
  p.timeUs = t * 1e6;
  p.algBw = algBandwidth(c.sizes.rowBytes, t);
  p.busBw = p.algBw * coll_.busBwFactor(nranks_);
  return p;
}

void Harness::synchronizeDevice() const {
  if (args_.device != 0 && !DeviceBuffer::synchronize()) {
    std::fprintf(stderr, "%s: rank %d: cudaDeviceSynchronize failed\n", coll_.name, rank_);
    std::exit(1);
  }
}

double Harness::timeCalls(const PerfCase& c, char* send, char* recv, int iters) {
  barrier();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) check(coll_.run(c, send, recv, comm_));
  synchronizeDevice();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count() / iters;
}

// -G: the -n calls captured into one graph, launched once untimed, then -G times timed
// (as nccl-tests' -G): the time per call.
double Harness::timeGraph(const PerfCase& c, char* send, char* recv) {
  void* graph = DeviceBuffer::capture(gStream, [&] {
    for (int i = 0; i < args_.iters; ++i) check(coll_.run(c, send, recv, comm_));
  });
  if (graph == nullptr) {
    std::fprintf(stderr, "%s: rank %d: capturing the calls into a CUDA graph failed\n", coll_.name,
                 rank_);
    std::exit(1);
  }
  auto launch = [&] {
    if (!DeviceBuffer::launch(graph, gStream)) {
      std::fprintf(stderr, "%s: rank %d: cudaGraphLaunch failed\n", coll_.name, rank_);
      std::exit(1);
    }
  };
  launch();
  synchronizeDevice();
  barrier();
  auto t0 = std::chrono::steady_clock::now();
  for (int l = 0; l < args_.graphLaunches; ++l) launch();
  synchronizeDevice();
  auto t1 = std::chrono::steady_clock::now();
  DeviceBuffer::destroyGraph(graph);
  return std::chrono::duration<double>(t1 - t0).count() / args_.iters / args_.graphLaunches;
}

void Harness::runType(braidDataType_t type, braidRedOp_t op) {
  size_t es = typeInfo(type).size;
  braidRedOp_t runOp = op;
  if (op == kMulSum) {  // this rank's scalar, by value
    unsigned char scalar[8] = {};
    storeElement(type, scalar, 0, mulSumScalar(rank_));
    check(braidRedOpCreatePreMulSum(&runOp, scalar, type, braidScalarHostImmediate, comm_));
  }
  for (size_t bytes : steps_) {
    Row row;
    row.c = PerfCase{type,
                     op,
                     args_.root,
                     rank_,
                     nranks_,
                     es,
                     coll_.getSizes(rowBytes(bytes, es), es, rank_, nranks_),
                     runOp};
    whichAlgorithm(row);
    row.out = runPlacement(row.c, false);
    // Without an in-place form (sendrecv: Braid rejects a group whose receive
    // overlaps its send), the in-place columns repeat out-of-place, unchecked.
    row.in = coll_.checkInPlace ? runPlacement(row.c, true) : row.out;
    if (!coll_.checkInPlace) row.in.wrong = -1;
    for (const Placement* p : {&row.out, &row.in}) {
      if (p == &row.in && !coll_.checkInPlace) continue;
      wrongTotal_ += std::max<int64_t>(p->wrong, 0);
      busBwSum_ += p->busBw;
      ++busBwCount_;
    }
    if (rank_ == 0) printRow(coll_, row);
    rows_.push_back(row);
  }
  if (runOp != op) check(braidRedOpDestroy(runOp, comm_));
}

// The braidCollective_t of -A's collective names; -1 for send/recv.
int collectiveEnum(const char* name) {
  static const std::pair<const char*, braidCollective_t> kNames[] = {
      {"allreduce", braidCollAllReduce},
      {"allgather", braidCollAllGather},
      {"reducescatter", braidCollReduceScatter},
      {"broadcast", braidCollBroadcast},
      {"reduce", braidCollReduce},
      {"gather", braidCollGather},
      {"scatter", braidCollScatter},
      {"alltoall", braidCollAlltoAll}};
  for (const auto& [n, c] : kNames) {
    if (name != nullptr && std::strcmp(name, n) == 0) return c;
  }
  return -1;
}

void Harness::whichAlgorithm(Row& row) const {
  const int c = collectiveEnum(coll_.algoCollective);
  if (c < 0) return;
  const char* name = nullptr;
  double us = 0;
  if (braidCommGetAlgorithm(comm_, static_cast<braidCollective_t>(c), row.c.sizes.paramCount,
                            row.c.type, &name, &us) == braidSuccess) {
    row.algorithm = name;
    row.predictedUs = us;
  }
}

RunSummary Harness::summary() const {
  RunSummary run;
  run.nranks = nranks_;
  run.algorithm = algorithm_;
  run.wrong = wrongTotal_;
  run.avgBusBw = busBwCount_ > 0 ? busBwSum_ / busBwCount_ : 0.0;
  return run;
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
  if (rank_ == 0) printFooter(summary());
  bool jsonOk =
      rank_ != 0 || args_.jsonPath.empty() || writeJson(args_.jsonPath, coll_, summary(), rows_);
  check(braidCommFinalize(comm_));
  check(braidCommDestroy(comm_));
  comm_ = nullptr;
  return wrongTotal_ == 0 && jsonOk ? 0 : 1;
}

}  // namespace

braidStream_t perfStream() { return gStream; }

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
  if (!args.algo.empty() && coll.algoCollective == nullptr) {
    if (!quiet) {
      std::fprintf(stderr, "%s: -A %s: there is no algorithm to choose for %s\n", coll.name,
                   args.algo.c_str(), coll.name);
    }
    return 1;
  }
  Harness harness(coll, args);
  return harness.run();
}

}  // namespace braid::perf
