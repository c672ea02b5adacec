/* nccl-tests-style timing of one MPI collective, for perf/compare/compare.py.
 * The same source is built with each MPI's wrapper (mpicc.openmpi,
 * mpicc.mpich); the label on the command line names the build.
 *
 *   mpirun -np P mpi_coll_perf LABEL COLL [-t seconds] [-m min_iters] SIZE...
 *   COLL: allreduce allgather reduce_scatter bcast alltoall reduce gather
 *         scatter sendrecv
 *
 * Sizes follow nccl-tests (and Braid's perf tools): SIZE is the whole buffer
 * for allreduce, bcast, reduce and sendrecv; the whole gathered array for
 * allgather, reduce_scatter (MPI_Reduce_scatter_block), alltoall, gather and
 * scatter, whose per-rank block is SIZE / 4 / P floats rounded down to 16
 * bytes. float32; sum where a reduction is involved; the rooted ones (bcast,
 * reduce, gather, scatter) from and to rank 0; sendrecv is nccl-tests' ring
 * exchange (MPI_Sendrecv to rank + 1, from rank - 1); out of place except bcast.
 *
 * Buffers are allocated once at the largest size and reused (OpenMPI frees its
 * own all-reduce scratch per call; fresh user buffers would add page faults).
 * Per size: two warm-up calls, then a calibration that doubles the iteration
 * count until a batch takes an eighth of the target time, then the timed
 * batch of about -t seconds (at least -m iterations). Time is the slowest
 * rank's mean per call (nccl-tests -a 3). A last call checks the result
 * against exact integer-valued sums. One row per size on rank 0:
 *
 *   row LABEL COLL P SIZE BYTES TIME_US ALGBW BUSBW WRONG
 *
 * BYTES is S of nccl-tests (what algbw divides); busbw uses nccl-tests'
 * factors: allreduce 2(P-1)/P, allgather, reduce_scatter, alltoall, gather and
 * scatter (P-1)/P, bcast, reduce and sendrecv 1. WRONG counts the elements that
 * differ from the exact answer wherever MPI defines one (the root's output of
 * reduce and gather, every rank's of the others).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum Coll {
  kAllreduce,
  kAllgather,
  kReduceScatter,
  kBcast,
  kAlltoall,
  kReduce,
  kGather,
  kScatter,
  kSendrecv,
  kNumColls
};

static const char* const kCollNames[kNumColls] = {
    "allreduce", "allgather", "reduce_scatter", "bcast",   "alltoall",
    "reduce",    "gather",    "scatter",        "sendrecv"};

static int parseColl(const char* name) {
  for (int c = 0; c < kNumColls; ++c) {
    if (strcmp(name, kCollNames[c]) == 0) return c;
  }
  return -1;
}

/* Per-rank block of a gathering collective, in floats (16-byte multiple). */
static long blockCount(long bytes, int nranks) {
  long perRank = bytes / 4 / nranks;
  return perRank / 4 * 4;
}

struct Shape {
  long sendCount, recvCount; /* floats in each buffer */
  long callCount;            /* the count argument */
  long algBytes;             /* S */
  double busFactor;
};

static struct Shape shapeOf(int coll, long bytes, int p) {
  struct Shape s;
  long block = blockCount(bytes, p);
  switch (coll) {
    case kAllreduce:
    case kBcast:
    case kReduce:
    case kSendrecv:
      s.sendCount = s.recvCount = s.callCount = bytes / 4;
      s.algBytes = s.callCount * 4;
      s.busFactor = coll == kAllreduce ? 2.0 * (p - 1) / p : 1.0;
      break;
    case kGather: /* the root's buffers as all-gather's */
    case kAllgather:
      s.sendCount = s.callCount = block;
      s.recvCount = block * p;
      s.algBytes = block * p * 4;
      s.busFactor = (double)(p - 1) / p;
      break;
    case kScatter: /* the root's buffers as reduce-scatter's */
    case kReduceScatter:
      s.sendCount = block * p;
      s.recvCount = s.callCount = block;
      s.algBytes = block * p * 4;
      s.busFactor = (double)(p - 1) / p;
      break;
    default: /* alltoall: callCount per peer */
      s.sendCount = s.recvCount = block * p;
      s.callCount = block;
      s.algBytes = block * p * 4;
      s.busFactor = (double)(p - 1) / p;
      break;
  }
  return s;
}

static void runOnce(int coll, const struct Shape* s, int rank, int p, float* in, float* out) {
  int n = (int)s->callCount;
  switch (coll) {
    case kAllreduce:
      MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case kAllgather:
      MPI_Allgather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case kReduceScatter:
      MPI_Reduce_scatter_block(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case kBcast:
      MPI_Bcast(out, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
    case kReduce:
      MPI_Reduce(in, out, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
      break;
    case kGather:
      MPI_Gather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
    case kScatter:
      MPI_Scatter(in, n, MPI_FLOAT, out, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
    case kSendrecv:
      MPI_Sendrecv(in, n, MPI_FLOAT, (rank + 1) % p, 0, out, n, MPI_FLOAT, (rank + p - 1) % p, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      break;
    default:
      MPI_Alltoall(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
      break;
  }
}

/* Rank r's input element i: small integers, so every sum is exact. */
static float inputValue(int r, long i) { return (float)(r + 1 + i % 7); }

static void fillInputs(int coll, const struct Shape* s, int rank, float* in, float* out) {
  for (long i = 0; i < s->sendCount; ++i) in[i] = inputValue(rank, i);
  for (long i = 0; i < s->recvCount; ++i) out[i] = -1.0f;
  if (coll == kBcast && rank == 0) {
    for (long i = 0; i < s->recvCount; ++i) out[i] = inputValue(0, i);
  }
}

/* Elements of `out` that differ from the exact answer (none where MPI defines
 * no output: the non-roots of reduce and gather). */
static long countWrong(int coll, const struct Shape* s, int rank, int p, const float* out) {
  long wrong = 0, block = s->callCount;
  if ((coll == kReduce || coll == kGather) && rank != 0) return 0;
  for (long i = 0; i < s->recvCount; ++i) {
    float want = 0;
    if (coll == kAllreduce || coll == kReduce) {
      for (int r = 0; r < p; ++r) want += inputValue(r, i);
    } else if (coll == kReduceScatter) {
      for (int r = 0; r < p; ++r) want += inputValue(r, rank * block + i);
    } else if (coll == kAllgather || coll == kGather) {
      want = inputValue((int)(i / block), i % block);
    } else if (coll == kBcast) {
      want = inputValue(0, i);
    } else if (coll == kScatter) { /* the root's block `rank` */
      want = inputValue(0, rank * block + i);
    } else if (coll == kSendrecv) {
      want = inputValue((rank + p - 1) % p, i);
    } else { /* alltoall: block b came from rank b, its block `rank` */
      want = inputValue((int)(i / block), rank * block + i % block);
    }
    if (out[i] != want) ++wrong;
  }
  return wrong;
}

/* Seconds per call, every rank running the same count. */
static double timeBatch(int coll, const struct Shape* s, int rank, int p, float* in, float* out,
                        long iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long i = 0; i < iters; ++i) runOnce(coll, s, rank, p, in, out);
  double mine = (MPI_Wtime() - t0) / (double)iters, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

static int usage(int rank) {
  if (rank == 0) {
    fprintf(stderr,
            "usage: mpi_coll_perf LABEL allreduce|allgather|reduce_scatter|bcast|alltoall|"
            "reduce|gather|scatter|sendrecv [-t seconds] [-m min_iters] SIZE...\n");
  }
  MPI_Finalize();
  return 2;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 4) return usage(rank);
  const char* label = argv[1];
  int coll = parseColl(argv[2]);
  if (coll < 0) return usage(rank);
  double target = 0.3;
  long minIters = 3, maxBytes = 0, sizes[64];
  int nsizes = 0;
  for (int a = 3; a < argc; ++a) {
    if (strcmp(argv[a], "-t") == 0 && a + 1 < argc) {
      target = atof(argv[++a]);
    } else if (strcmp(argv[a], "-m") == 0 && a + 1 < argc) {
      minIters = atol(argv[++a]);
    } else {
      char* end = NULL;
      long b = strtol(argv[a], &end, 10);
      if (end == argv[a] || *end != '\0' || b < 4 || nsizes == 64) return usage(rank);
      sizes[nsizes++] = b;
      if (b > maxBytes) maxBytes = b;
    }
  }
  if (target <= 0 || minIters < 1 || nsizes == 0) return usage(rank);
  float* in = malloc((size_t)maxBytes + 64);
  float* out = malloc((size_t)maxBytes + 64);
  if (in == NULL || out == NULL) {
    fprintf(stderr, "mpi_coll_perf: rank %d: cannot allocate 2 x %ld bytes\n", rank, maxBytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int k = 0; k < nsizes; ++k) {
    struct Shape s = shapeOf(coll, sizes[k], p);
    fillInputs(coll, &s, rank, in, out);
    runOnce(coll, &s, rank, p, in, out);
    runOnce(coll, &s, rank, p, in, out);
    long iters = 1;
    double t = timeBatch(coll, &s, rank, p, in, out, iters);
    while (t * (double)iters < target / 8 && iters < 1000000) {
      iters *= 2;
      t = timeBatch(coll, &s, rank, p, in, out, iters);
    }
    iters = (long)(target / (t > 1e-9 ? t : 1e-9));
    if (iters < minIters) iters = minIters;
    t = timeBatch(coll, &s, rank, p, in, out, iters);
    fillInputs(coll, &s, rank, in, out);
    runOnce(coll, &s, rank, p, in, out);
    long wrong = countWrong(coll, &s, rank, p, out), total = 0;
    MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double algbw = (double)s.algBytes / t / 1e9;
      printf("row %s %s %d %ld %ld %.3f %.4f %.4f %ld\n", label, kCollNames[coll], p, sizes[k],
             s.algBytes, t * 1e6, algbw, algbw * s.busFactor, total);
      fflush(stdout);
    }
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
