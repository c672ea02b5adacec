// A perf thread's timed part (nccl-tests' BenchTime): per placement, the
// checks, the warm-up, the timed loop (-m aggregation, -z blocking, -I
// per-iteration times, -G graphs) and the combination of times across ranks.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "perf/coll/perf_data.h"
#include "perf/coll/perf_util.h"
#include "perf/coll/perf_worker.h"

namespace braid::perf {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

void PerfWorker::place(Rank& r, bool inPlace) {
  const bool dev = args_.deviceBuffers != 0;
  char* recvBase = dev ? r.drecv.data() : r.recv.data();
  r.recvPtr = recvBase + (inPlace ? r.c.sizes.recvInplaceOffset * r.c.elemSize : 0);
  r.sendPtr = inPlace ? recvBase + r.c.sizes.sendInplaceOffset * r.c.elemSize
                      : (dev ? r.dsend.data() : r.send.data());
}

Placement PerfWorker::runPlacement(bool inPlace) {
  for (const std::unique_ptr<Rank>& r : ranks_) place(*r, inPlace);
  Placement p;
  const bool checked = args_.check > 0 && (!inPlace || coll_.checkInPlace);
  if (checked) {
    int64_t wrong = 0;
    for (const std::unique_ptr<Rank>& r : ranks_) wrong += checkRank(*r);
    failedChecks_ += wrong > 0 ? 1 : 0;
    p.wrong = sumOverRanks(wrong);
  } else {
    p.wrong = -1;
  }
  for (int i = 0; i < args_.warmupIters; ++i) issueOne();
  syncAll();
  std::vector<double> iterSeconds;
  const bool graph = args_.graphLaunches > 0 && args_.deviceBuffers;
  const double seconds =
      graph ? timeGraph() : timeCalls(args_.perIterTiming ? &iterSeconds : nullptr);
  const double t = combineTime(seconds);
  const PerfCase& c = ranks_.front()->c;
  const double bytes = coll_.algBytes != nullptr ? coll_.algBytes(c.sizes, c.elemSize, nranks_)
                                                 : static_cast<double>(c.sizes.rowBytes);
  p.timeUs = t * 1e6;
  p.algBw = t > 0.0 ? bytes / t / 1e9 : 0.0;
  p.busBw = p.algBw * coll_.busBwFactor(nranks_);
  if (args_.perIterTiming) {
    p.hasIters = true;
    p.iters = combineIters(iterSeconds);
  }
  return p;
}

// Runs the call `check` times on fresh data; returns this rank's wrong elements.
int64_t PerfWorker::checkRank(Rank& r) {
  if (args_.deviceBuffers) return checkOnDevice(r);
  int64_t wrong = 0;
  for (int k = 0; k < args_.check; ++k) {
    // Poison first, so that a stale result of an earlier row cannot pass.
    std::memset(r.recv.data(), 0xa5, r.recvBytes);
    coll_.fillInput(r.c, r.sendPtr);
    // The other ranks of this thread are checked one after the other, so the
    // call runs in a group with theirs (their data refilled, the same again).
    if (ranks_.size() > 1) {
      for (const std::unique_ptr<Rank>& o : ranks_) {
        if (o.get() != &r) coll_.fillInput(o->c, o->sendPtr);
      }
    }
    issueOne();
    syncAll();
    size_t n = coll_.fillExpected(r.c, r.expected.data());
    wrong += static_cast<int64_t>(countMismatches(r.c.type, r.recvPtr, r.expected.data(), n));
  }
  return wrong;
}

// checkRank on device buffers: inputs are made in the host mirrors and copied over
// whole (an in-place send lies inside the receive buffer), results copied back.
int64_t PerfWorker::checkOnDevice(Rank& r) {
  auto mirrorOf = [](const DeviceBuffer& b, char* p) { return b.mirror() + (p - b.data()); };
  int64_t wrong = 0;
  for (int k = 0; k < args_.check; ++k) {
    for (const std::unique_ptr<Rank>& o : ranks_) {
      useDevice(*o);
      const DeviceBuffer& sendOwner = o->drecv.contains(o->sendPtr) ? o->drecv : o->dsend;
      std::memset(o->drecv.mirror(), 0xa5, o->recvBytes);
      coll_.fillInput(o->c, mirrorOf(sendOwner, o->sendPtr));
      if (!DeviceBuffer::toDevice(o->dsend.data(), o->dsend.mirror(), o->dsend.bytes(),
                                  o->stream) ||
          !DeviceBuffer::toDevice(o->drecv.data(), o->drecv.mirror(), o->drecv.bytes(),
                                  o->stream)) {
        die("copy to the device failed");
      }
    }
    issueOne();
    syncAll();
    useDevice(r);
    if (!DeviceBuffer::toHost(r.drecv.mirror(), r.drecv.data(), r.recvBytes, r.stream)) {
      die("copy from the device failed");
    }
    size_t n = coll_.fillExpected(r.c, r.expected.data());
    wrong += static_cast<int64_t>(
        countMismatches(r.c.type, mirrorOf(r.drecv, r.recvPtr), r.expected.data(), n));
  }
  return wrong;
}

// One call on every rank of this thread, in one group when there are several.
void PerfWorker::issueOne() {
  const bool group = ranks_.size() > 1 && coll_.groupable;
  if (group) check(braidGroupStart(), nullptr);
  for (const std::unique_ptr<Rank>& r : ranks_) {
    if (ranks_.size() > 1) useDevice(*r);
    check(coll_.run(r->c, r->sendPtr, r->recvPtr, r->comm), r->comm);
  }
  if (group) check(braidGroupEnd(), nullptr);
}

// One timed iteration: -m calls per rank in one group, or (-z 1, 2) each call
// waited for, and with -z 1 followed by a barrier.
void PerfWorker::issueIteration() {
  if (args_.blocking == 1 || args_.blocking == 2) {
    for (int a = 0; a < args_.aggIters; ++a) {
      issueOne();
      syncAll();
      if (args_.blocking == 1) barrier();
    }
    return;
  }
  const bool group = args_.aggIters > 1 && coll_.groupable && coll_.aggregatable;
  if (group) check(braidGroupStart(), nullptr);
  for (int a = 0; a < args_.aggIters; ++a) issueOne();
  if (group) check(braidGroupEnd(), nullptr);
}

void PerfWorker::syncAll() {
  for (const std::unique_ptr<Rank>& r : ranks_) {
    if (r->stream == nullptr) continue;
    if (args_.deviceBuffers) {
      useDevice(*r);
      if (!DeviceBuffer::synchronize(r->stream)) die("cudaStreamSynchronize failed");
    } else {
      check(braidStreamSynchronize(r->stream), r->comm);
    }
  }
}

double PerfWorker::timeCalls(std::vector<double>* iterSeconds) {
  const double calls = static_cast<double>(args_.iters) * args_.aggIters;
  barrier();
  double excluded = 0.0;  // -z 3: the barriers between iterations
  const auto t0 = Clock::now();
  for (int it = 0; it < args_.iters; ++it) {
    // The clock is read per iteration only where each is reported: a read costs a
    // good part of a small call.
    const auto ti = iterSeconds != nullptr ? Clock::now() : t0;
    issueIteration();
    if (args_.blocking == 3 || iterSeconds != nullptr) syncAll();
    if (iterSeconds != nullptr) iterSeconds->push_back(since(ti) / args_.aggIters);
    if (args_.blocking == 3) {
      const auto tb = Clock::now();
      barrier();
      excluded += since(tb);
    }
  }
  const double issued = since(t0) - excluded;
  syncAll();
  const double total = since(t0) - excluded;
  return (args_.reportCpuTime ? issued : total) / calls;
}

// -G: the timed calls captured into one graph, launched once untimed, then -G
// times timed (as nccl-tests' -G): the time per call. One rank per thread.
double PerfWorker::timeGraph() {
  Rank& r = *ranks_.front();
  void* graph = DeviceBuffer::capture(
      r.stream,
      [](void* self) {
        auto* w = static_cast<PerfWorker*>(self);
        for (int i = 0; i < w->args_.iters; ++i) w->issueIteration();
      },
      this);
  if (graph == nullptr) die("capturing the calls into a CUDA graph failed");
  auto launch = [&] {
    if (!DeviceBuffer::launch(graph, r.stream)) die("cudaGraphLaunch failed");
  };
  launch();
  syncAll();
  barrier();
  const auto t0 = Clock::now();
  for (int l = 0; l < args_.graphLaunches; ++l) launch();
  const double issued = since(t0);
  syncAll();
  const double total = since(t0);
  DeviceBuffer::destroyGraph(graph);
  const double calls = static_cast<double>(args_.iters) * args_.aggIters * args_.graphLaunches;
  return (args_.reportCpuTime ? issued : total) / calls;
}

void PerfWorker::barrier() {
  std::vector<int32_t> one(ranks_.size(), 1);
  if (ranks_.size() > 1) check(braidGroupStart(), nullptr);
  for (size_t i = 0; i < ranks_.size(); ++i) {
    check(braidAllReduce(&one[i], &one[i], 1, braidInt32, braidSum, ranks_[i]->comm, nullptr),
          ranks_[i]->comm);
  }
  if (ranks_.size() > 1) check(braidGroupEnd(), nullptr);
}

// v is this thread's total; every rank of the thread adds it once (the first),
// zero from the others, so the sum counts each thread once.
int64_t PerfWorker::sumOverRanks(int64_t v) {
  std::vector<int64_t> vals(ranks_.size(), 0);
  vals[0] = v;
  if (ranks_.size() > 1) check(braidGroupStart(), nullptr);
  for (size_t i = 0; i < ranks_.size(); ++i) {
    check(braidAllReduce(&vals[i], &vals[i], 1, braidInt64, braidSum, ranks_[i]->comm, nullptr),
          ranks_[i]->comm);
  }
  if (ranks_.size() > 1) check(braidGroupEnd(), nullptr);
  return vals[0];
}

// Combines the ranks' seconds per call as -a asks (every rank of a thread has
// the thread's time).
double PerfWorker::combineTime(double seconds) {
  braidRedOp_t op = braidSum;
  if (args_.average == AverageMode::kMin) op = braidMin;
  if (args_.average == AverageMode::kMax) op = braidMax;
  std::vector<double> t(ranks_.size(), seconds);
  if (args_.average == AverageMode::kRankZero) {
    for (size_t i = 0; i < ranks_.size(); ++i) t[i] = ranks_[i]->rank == 0 ? seconds : 0.0;
  }
  if (ranks_.size() > 1) check(braidGroupStart(), nullptr);
  for (size_t i = 0; i < ranks_.size(); ++i) {
    check(braidAllReduce(&t[i], &t[i], 1, braidFloat64, op, ranks_[i]->comm, nullptr),
          ranks_[i]->comm);
  }
  if (ranks_.size() > 1) check(braidGroupEnd(), nullptr);
  return args_.average == AverageMode::kMean ? t[0] / nranks_ : t[0];
}

// -I: each process's row holds the max over its ranks per iteration (a max
// all-reduce where every rank fills its process's row); the report's times are
// the max over processes.
IterReport PerfWorker::combineIters(const std::vector<double>& iterSeconds) {
  const PerfLayout& l = world_->layout();
  const size_t n = iterSeconds.size();
  std::vector<std::vector<double>> rows(ranks_.size(),
                                        std::vector<double>(static_cast<size_t>(l.nProcs) * n, 0));
  if (ranks_.size() > 1) check(braidGroupStart(), nullptr);
  for (size_t i = 0; i < ranks_.size(); ++i) {
    std::copy(iterSeconds.begin(), iterSeconds.end(),
              rows[i].begin() + static_cast<long>(l.proc * n));
    check(braidAllReduce(rows[i].data(), rows[i].data(), rows[i].size(), braidFloat64, braidMax,
                         ranks_[i]->comm, nullptr),
          ranks_[i]->comm);
  }
  if (ranks_.size() > 1) check(braidGroupEnd(), nullptr);
  IterReport r;
  r.skipped = args_.perIterSkip;
  r.timesUs.assign(n, 0.0);
  for (int p = 0; p < l.nProcs; ++p) {
    std::vector<double> row(n);
    for (size_t k = 0; k < n; ++k) {
      row[k] = rows[0][static_cast<size_t>(p) * n + k] * 1e6;
      r.timesUs[k] = std::max(r.timesUs[k], row[k]);
    }
    r.perProcessUs.push_back(std::move(row));
  }
  computeIterStats(&r);
  return r;
}

}  // namespace braid::perf
