// Gloo's all-reduce (float32 sum), timed like mpi_coll_perf.c, for
// perf/compare/compare.py. Built where Debian's libgloo-dev is installed.
//
// One process per rank, started by the caller (no launcher):
//   RANK=r WORLD_SIZE=P GLOO_STORE=/tmp/dir gloo_allreduce_perf [-t s] [-m n] SIZE...
//
// Gloo's function API (gloo::allreduce, what torch.distributed's gloo backend
// calls) over its TCP transport on loopback: Debian's Gloo has no shared-memory
// transport. Options are built per call, as torch does. Rendezvous through a
// FileStore in GLOO_STORE (a directory every rank sees). Prints, on rank 0,
//   row gloo allreduce P SIZE BYTES TIME_US ALGBW BUSBW WRONG
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Ctx = std::shared_ptr<gloo::Context>;

void allreduceSum(const Ctx& ctx, const float* in, float* out, size_t count) {
  gloo::AllreduceOptions opts(ctx);
  opts.setInput(const_cast<float*>(in), count);
  opts.setOutput(out, count);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  gloo::allreduce(opts);
}

double maxOverRanks(const Ctx& ctx, double mine) {
  double out = 0;
  gloo::AllreduceOptions opts(ctx);
  opts.setInput(&mine, 1);
  opts.setOutput(&out, 1);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
  gloo::allreduce(opts);
  return out;
}

// Seconds per call, the slowest rank's mean; every rank runs `iters`.
double timeBatch(const Ctx& ctx, const float* in, float* out, size_t count, long iters) {
  gloo::BarrierOptions barrier(ctx);
  gloo::barrier(barrier);
  Clock::time_point t0 = Clock::now();
  for (long i = 0; i < iters; ++i) allreduceSum(ctx, in, out, count);
  double mine = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  return maxOverRanks(ctx, mine);
}

float inputValue(int rank, size_t i) { return static_cast<float>(rank + 1 + i % 7); }

int usage() {
  std::fprintf(stderr,
               "usage: RANK=r WORLD_SIZE=P GLOO_STORE=dir gloo_allreduce_perf [-t seconds] "
               "[-m min_iters] SIZE...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const char* rankText = std::getenv("RANK");
  const char* sizeText = std::getenv("WORLD_SIZE");
  const char* storeDir = std::getenv("GLOO_STORE");
  if (rankText == nullptr || sizeText == nullptr || storeDir == nullptr) return usage();
  int rank = std::atoi(rankText), nranks = std::atoi(sizeText);
  if (nranks < 1 || rank < 0 || rank >= nranks) return usage();
  double target = 0.3;
  long minIters = 3;
  std::vector<long> sizes;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "-t") == 0 && a + 1 < argc) {
      target = std::atof(argv[++a]);
    } else if (std::strcmp(argv[a], "-m") == 0 && a + 1 < argc) {
      minIters = std::atol(argv[++a]);
    } else {
      char* end = nullptr;
      long b = std::strtol(argv[a], &end, 10);
      if (end == argv[a] || *end != '\0' || b < 4) return usage();
      sizes.push_back(b);
    }
  }
  if (sizes.empty() || target <= 0 || minIters < 1) return usage();

  gloo::transport::tcp::attr attr("127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(storeDir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  context->setTimeout(std::chrono::seconds(300));
  context->connectFullMesh(store, device);
  Ctx ctx = context;

  long maxBytes = *std::max_element(sizes.begin(), sizes.end());
  std::vector<float> in(static_cast<size_t>(maxBytes) / 4), out(in.size());
  for (long bytes : sizes) {
    size_t count = static_cast<size_t>(bytes) / 4;
    for (size_t i = 0; i < count; ++i) in[i] = inputValue(rank, i);
    allreduceSum(ctx, in.data(), out.data(), count);
    allreduceSum(ctx, in.data(), out.data(), count);
    long iters = 1;
    double t = timeBatch(ctx, in.data(), out.data(), count, iters);
    while (t * static_cast<double>(iters) < target / 8 && iters < 1000000) {
      iters *= 2;
      t = timeBatch(ctx, in.data(), out.data(), count, iters);
    }
    iters = std::max(minIters, static_cast<long>(target / std::max(t, 1e-9)));
    t = timeBatch(ctx, in.data(), out.data(), count, iters);
    std::fill(out.begin(), out.end(), -1.0f);
    allreduceSum(ctx, in.data(), out.data(), count);
    double wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < nranks; ++r) want += inputValue(r, i);
      if (out[i] != want) ++wrong;
    }
    wrong = maxOverRanks(ctx, wrong);  // the most wrong elements any rank saw
    if (rank == 0) {
      double algbw = static_cast<double>(count * 4) / t / 1e9;
      std::printf("row gloo allreduce %d %ld %zu %.3f %.4f %.4f %.0f\n", nranks, bytes, count * 4,
                  t * 1e6, algbw, algbw * 2.0 * (nranks - 1) / nranks, wrong);
      std::fflush(stdout);
    }
  }
  return 0;
}
