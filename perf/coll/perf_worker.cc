// A perf thread's set-up, loops and report: see perf_worker.h. The timed part
// (placements, checks, timing) is perf_timing.cc.
#include "perf/coll/perf_worker.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "perf/coll/perf_data.h"
#include "perf/coll/perf_util.h"

namespace braid::perf {
namespace {

constexpr size_t kHostSlot = 64;  // bytes per host name when gathering them

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
      {"alltoall", braidCollAlltoAll},
      {"alltoallv", braidCollAlltoAllv}};
  for (const auto& [n, c] : kNames) {
    if (name != nullptr && std::strcmp(name, n) == 0) return c;
  }
  return -1;
}

}  // namespace

PerfWorker::PerfWorker(const PerfCollective& coll, const PerfArgs& args, PerfWorld* world,
                       int thread, JsonReport* json)
    : coll_(coll), args_(args), world_(world), thread_(thread), json_(json) {}

PerfWorker::~PerfWorker() {
  for (const std::unique_ptr<Rank>& r : ranks_) {
    if (r->stream == nullptr) continue;
    if (args_.deviceBuffers) {
      DeviceBuffer::destroyStream(r->stream);
    } else {
      (void)braidStreamDestroy(r->stream);
    }
  }
}

void PerfWorker::fail(braidResult_t result, braidComm_t comm) const {
  const int rank = ranks_.empty() ? -1 : ranks_.front()->rank;
  std::fprintf(stderr, "%s: rank %d: %s: %s\n", coll_.name, rank, braidGetErrorString(result),
               braidGetLastError(comm));
  std::fflush(stderr);
  std::exit(1);
}

void PerfWorker::die(const char* what) const {
  const int rank = ranks_.empty() ? -1 : ranks_.front()->rank;
  std::fprintf(stderr, "%s: rank %d: %s\n", coll_.name, rank, what);
  std::fflush(stderr);
  std::exit(1);
}

void PerfWorker::useDevice(const Rank& r) const {
  if (args_.deviceBuffers && !DeviceBuffer::setDevice(world_->layout().devices.deviceOf(r.local))) {
    die("cudaSetDevice failed");
  }
}

void PerfWorker::setUp() {
  const PerfLayout& l = world_->layout();
  nranks_ = l.nranks();
  for (int g = 0; g < l.nGpus; ++g) {
    auto r = std::make_unique<Rank>();
    r->local = thread_ * l.nGpus + g;
    r->rank = l.rankOf(r->local);
    r->comm = world_->comm(r->local);
    ranks_.push_back(std::move(r));
    Rank& rank = *ranks_.back();
    useDevice(rank);
    if (args_.deviceBuffers) {
      rank.stream = DeviceBuffer::createStream();
      if (rank.stream == nullptr) die("cudaStreamCreate failed (-E 1 needs a CUDA device)");
    } else if (!args_.streamNull) {
      check(braidStreamCreate(&rank.stream), nullptr);
    }
  }
}

// Every rank's buffers, sized for the largest row of any type, reused.
void PerfWorker::allocate(const std::vector<size_t>& steps) {
  for (const std::unique_ptr<Rank>& rp : ranks_) {
    Rank& r = *rp;
    size_t sendBytes = 0, recvBytes = 0, expectedBytes = 0;
    for (braidDataType_t type : args_.types) {
      const size_t es = typeInfo(type).size;
      for (size_t bytes : steps) {
        PerfSizes s = coll_.getSizes(bytes / es * es, es, r.rank, nranks_);
        sendBytes = std::max(sendBytes, s.sendCount * es);
        size_t recvElems = std::max(
            {s.recvCount, s.sendInplaceOffset + s.sendCount, s.recvInplaceOffset + s.recvCount});
        recvBytes = std::max(recvBytes, recvElems * es);
        expectedBytes = std::max(expectedBytes, s.recvCount * es);
      }
    }
    r.recvBytes = recvBytes;
    info_.bufferBytes = sendBytes + recvBytes + (args_.check > 0 ? expectedBytes : 0);
    useDevice(r);
    const size_t un = static_cast<size_t>(args_.unalign);
    if (args_.deviceBuffers) {
      std::string error;
      if (!r.dsend.allocate(sendBytes, un, r.stream, &error) ||
          !r.drecv.allocate(recvBytes, un, r.stream, &error)) {
        die(("-E 1: cannot allocate device memory: " + error).c_str());
      }
    }
    const bool host = args_.deviceBuffers == 0;
    braidComm_t reg = host && args_.localRegister != 0 ? r.comm : nullptr;
    const bool shared = host && args_.memAlloc != 0;
    if (!r.send.allocate(host ? sendBytes : 0, shared, reg, un) ||
        !r.recv.allocate(host ? recvBytes : 0, shared, reg, un) ||
        !r.expected.allocate(args_.check > 0 ? expectedBytes : 0)) {
      die("cannot allocate host memory for the buffers");
    }
  }
  if (!args_.deviceBuffers) return;
  // A device collective first (a barrier on each rank's stream) sets up the device
  // windows, which send/recv use only once a collective has made them. This thread's
  // ranks in one group: each rank's barrier waits for the others.
  if (ranks_.size() > 1) check(braidGroupStart(), nullptr);
  for (const std::unique_ptr<Rank>& r : ranks_) {
    useDevice(*r);
    check(braidBarrier(r->comm, r->stream), r->comm);
  }
  if (ranks_.size() > 1) check(braidGroupEnd(), nullptr);
  syncAll();
}

// Every rank's pid and host name reach rank 0 through sum all-reduces over
// buffers where each rank fills only its own slot.
void PerfWorker::gatherRankInfo() {
  const size_t n = static_cast<size_t>(nranks_);
  // Each rank's pid, and its device + 1 (-E 1; 0 for host buffers), in one all-reduce.
  std::vector<std::vector<int32_t>> pids(ranks_.size(), std::vector<int32_t>(2 * n, 0));
  std::vector<std::vector<uint8_t>> hosts(ranks_.size(), std::vector<uint8_t>(n * kHostSlot, 0));
  char name[kHostSlot] = {};
  gethostname(name, kHostSlot - 1);
  if (ranks_.size() > 1) check(braidGroupStart(), nullptr);
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const Rank& r = *ranks_[i];
    pids[i][static_cast<size_t>(r.rank)] = static_cast<int32_t>(getpid());
    if (args_.deviceBuffers) {
      pids[i][n + static_cast<size_t>(r.rank)] = world_->layout().devices.deviceOf(r.local) + 1;
    }
    std::memcpy(&hosts[i][static_cast<size_t>(r.rank) * kHostSlot], name, kHostSlot - 1);
    check(braidAllReduce(pids[i].data(), pids[i].data(), 2 * n, braidInt32, braidSum, r.comm,
                         nullptr),
          r.comm);
    check(braidAllReduce(hosts[i].data(), hosts[i].data(), hosts[i].size(), braidUint8, braidSum,
                         r.comm, nullptr),
          r.comm);
  }
  if (ranks_.size() > 1) check(braidGroupEnd(), nullptr);
  if (!holdsRankZero()) return;
  const int perProc = world_->layout().perProc();
  for (int q = 0; q < nranks_; ++q) {
    RankInfo ri;
    ri.rank = q;
    ri.pid = pids[0][static_cast<size_t>(q)];
    ri.host.assign(reinterpret_cast<const char*>(&hosts[0][static_cast<size_t>(q) * kHostSlot]));
    const int32_t device = pids[0][n + static_cast<size_t>(q)];  // device + 1; 0: host
    ri.device = device > 0 ? device - 1 : q % perProc;
    info_.ranks.push_back(ri);
  }
}

int PerfWorker::run() {
  if (args_.parallelInit) {
    std::string error;
    const int g = world_->layout().nGpus;
    if (!world_->initRanks(thread_ * g, g, &error)) die(error.c_str());
  }
  setUp();
  const std::vector<size_t> steps =
      sizeSteps(args_.minBytes, args_.maxBytes, args_.stepFactor, args_.stepBytes);
  if (coll_.hasRoot && args_.root >= nranks_) {
    if (holdsRankZero()) {
      std::fprintf(stderr, "%s: -r %d: root must be below the number of ranks (%d)\n", coll_.name,
                   args_.root, nranks_);
    }
    return 1;
  }
  if (!coll_.groupable && ranks_.size() > 1 && args_.streamNull) {
    // One after the other on the NULL stream, a rank's call would wait for its
    // partner's, which this same thread has not issued yet.
    die("-g above 1 needs streams here (-y 0): this tool's calls cannot share a group");
  }
  allocate(steps);
  gatherRankInfo();
  info_.tool = coll_.name;
  info_.args = &args_;
  info_.layout = world_->layout();
  info_.algorithm = algoLabel(args_.algo, std::getenv("BRAID_ALGO"));
  info_.noEffect = noEffectOptions(args_);
  if (holdsRankZero()) printHeader(info_);
  const bool skip = coll_.powerOfTwoRanks && (nranks_ & (nranks_ - 1)) != 0;
  if (skip && holdsRankZero()) std::printf("nRanks %d is not a power of 2, skipping\n", nranks_);
  if (holdsRankZero() && !skip) printColumnTitles(args_);
  const std::vector<braidRedOp_t> ops =
      coll_.hasOp ? args_.ops : std::vector<braidRedOp_t>{braidSum};
  for (int cycle = 0; !skip && (args_.runCycles == 0 || cycle < args_.runCycles); ++cycle) {
    for (braidDataType_t type : args_.types) {
      for (braidRedOp_t op : ops) runType(type, op, steps);
    }
  }
  info_.wrong = sumOverRanks(failedChecks_);
  info_.avgBusBw = busBwCount_ > 0 ? busBwSum_ / busBwCount_ : 0.0;
  bool jsonOk = true;
  if (holdsRankZero()) {
    printFooter(info_);
    if (json_ != nullptr) jsonOk = json_->finish(coll_, info_, rows_);
  }
  return wrongTotal_ == 0 && jsonOk ? 0 : 1;
}

void PerfWorker::runType(braidDataType_t type, braidRedOp_t op, const std::vector<size_t>& steps) {
  for (const std::unique_ptr<Rank>& r : ranks_) {
    r->c.runOp = op;
    if (op == kMulSum) {  // this rank's scalar, by value
      unsigned char scalar[8] = {};
      storeElement(type, scalar, 0, mulSumScalar(r->rank));
      check(braidRedOpCreatePreMulSum(&r->c.runOp, scalar, type, braidScalarHostImmediate, r->comm),
            r->comm);
    }
  }
  for (size_t bytes : steps) runRow(type, op, bytes);
  for (const std::unique_ptr<Rank>& r : ranks_) {
    if (op == kMulSum) check(braidRedOpDestroy(r->c.runOp, r->comm), r->comm);
  }
}

void PerfWorker::runRow(braidDataType_t type, braidRedOp_t op, size_t bytes) {
  const size_t es = typeInfo(type).size;
  for (const std::unique_ptr<Rank>& r : ranks_) {
    const braidRedOp_t runOp = r->c.runOp;
    r->c = PerfCase{type,
                    op,
                    args_.root,
                    r->rank,
                    nranks_,
                    es,
                    coll_.getSizes(bytes / es * es, es, r->rank, nranks_),
                    runOp,
                    r->stream};
  }
  Row row;
  row.c = ranks_.front()->c;
  row.out = runPlacement(false);
  // Asked once the size has run: a device communicator's first call makes the windows,
  // from which on the answer is the device path's (braid.h).
  const int collective = collectiveEnum(coll_.algoCollective);
  const char* name = nullptr;
  if (holdsRankZero() && collective >= 0 &&
      braidCommGetAlgorithm(ranks_.front()->comm, static_cast<braidCollective_t>(collective),
                            row.c.sizes.paramCount, type, &name,
                            &row.predictedUs) == braidSuccess) {
    row.algorithm = name;
  }
  // Without an in-place form (alltoallv: its receive blocks would overlap its send blocks
  // unevenly), the in-place columns repeat out-of-place, unchecked.
  row.in = coll_.checkInPlace ? runPlacement(true) : row.out;
  if (!coll_.checkInPlace) row.in.wrong = -1;
  for (const Placement* p : {&row.out, &row.in}) {
    if (p == &row.in && !coll_.checkInPlace) continue;
    wrongTotal_ += std::max<int64_t>(p->wrong, 0);
    busBwSum_ += p->busBw;
    ++busBwCount_;
  }
  if (holdsRankZero()) {
    printRow(coll_, args_, row);
    rows_.push_back(row);
  }
}

}  // namespace braid::perf
