/* What the NCCL drop-in adds per call: the same 8-byte all-reduce through
 * ncclAllReduce (libnccl.so.2) and braidAllReduce (libbraid.so), in
 * alternating blocks on the same ranks, NULL stream. Run by hand (not a
 * test: speed is not asserted):
 *
 *   nccl_overhead [NRANKS=2] [ITERS=2000] [BLOCKS=6]
 *
 * Prints the median and the 10th/90th percentiles of one call, per library;
 * NRANKS=1 times the calls with no peer to wait for (the layers' own cost). */
#define _GNU_SOURCE
#include <braid/braid.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void report(const char* name, double* t, int n) {
  qsort(t, n, sizeof(double), cmp);
  printf("%-16s median %.3f us  p10 %.3f  p90 %.3f  (%d calls)\n", name, t[n / 2], t[n / 10],
         t[n * 9 / 10], n);
}

#define OK(x)                                              \
  do {                                                     \
    if ((x) != 0) {                                        \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x); \
      exit(1);                                             \
    }                                                      \
  } while (0)

int main(int argc, char** argv) {
  const int nranks = argc > 1 ? atoi(argv[1]) : 2;
  const int iters = argc > 2 ? atoi(argv[2]) : 2000;
  const int blocks = argc > 3 ? atoi(argv[3]) : 6;
  int pipes[16][2];
  for (int r = 0; r < nranks; ++r) OK(pipe(pipes[r]));
  for (int rank = 0; rank < nranks; ++rank) {
    if (fork() != 0) continue;
    braidUniqueId bid;
    ncclUniqueId nid;
    if (rank == 0) {
      OK(braidGetUniqueId(&bid));
      OK(ncclGetUniqueId(&nid));
      for (int r = 1; r < nranks; ++r) {
        OK(write(pipes[r][1], &bid, sizeof(bid)) != sizeof(bid));
        OK(write(pipes[r][1], &nid, sizeof(nid)) != sizeof(nid));
      }
    } else {
      OK(read(pipes[rank][0], &bid, sizeof(bid)) != sizeof(bid));
      OK(read(pipes[rank][0], &nid, sizeof(nid)) != sizeof(nid));
    }
    braidComm_t b;
    ncclComm_t c;
    OK(braidCommInitRank(&b, nranks, bid, rank));
    OK(ncclCommInitRank(&c, nranks, nid, rank));
    float in[2] = {1, 2}, out[2];
    double* tb = malloc(sizeof(double) * iters * blocks);
    double* tn = malloc(sizeof(double) * iters * blocks);
    for (int i = 0; i < 200; ++i) {  /* warm-up: connections, schedules */
      OK(braidAllReduce(in, out, 2, braidFloat32, braidSum, b, NULL));
      OK(ncclAllReduce(in, out, 2, ncclFloat32, ncclSum, c, NULL));
    }
    for (int k = 0; k < blocks; ++k) {
      for (int i = 0; i < iters; ++i) {
        double t0 = now();
        OK(braidAllReduce(in, out, 2, braidFloat32, braidSum, b, NULL));
        tb[k * iters + i] = now() - t0;
      }
      for (int i = 0; i < iters; ++i) {
        double t0 = now();
        OK(ncclAllReduce(in, out, 2, ncclFloat32, ncclSum, c, NULL));
        tn[k * iters + i] = now() - t0;
      }
    }
    if (rank == 0) {
      printf("8 B float32 sum all-reduce, %d rank(s), NULL stream\n", nranks);
      report("braidAllReduce", tb, iters * blocks);
      report("ncclAllReduce", tn, iters * blocks);
    }
    OK(ncclCommDestroy(c));
    OK(braidCommDestroy(b));
    fflush(stdout);
    _exit(0);
  }
  int failed = 0;
  for (int r = 0; r < nranks; ++r) {
    int status;
    wait(&status);
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return failed;
}
