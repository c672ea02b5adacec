/* MPI_Allreduce (float32 sum) timing for perf/compare/net_allreduce.sh, which
 * builds it with mpicc. Buffers are allocated once and reused (OpenMPI frees
 * its scratch per call; fresh buffers would add page faults to its numbers).
 * One row per size: bytes, time per call in us (the slowest rank's mean),
 * busbw in GB/s (size / time * 2(n-1)/n), and whether the sum was exact.
 *
 *   mpicc -O2 net_mpi_allreduce.c -o net_mpi_allreduce
 *   mpirun -np 2 ./net_mpi_allreduce 8 64 4096 1048576 ...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int itersFor(long bytes) {
  if (bytes <= (1L << 16)) return 200;
  if (bytes <= (1L << 22)) return 20;
  return 3;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long maxBytes = 0;
  for (int i = 1; i < argc; ++i) {
    long b = atol(argv[i]);
    if (b > maxBytes) maxBytes = b;
  }
  size_t maxCount = (size_t)maxBytes / sizeof(float) + 1;
  float* in = malloc(maxCount * sizeof(float));
  float* out = malloc(maxCount * sizeof(float));
  for (size_t i = 0; i < maxCount; ++i) in[i] = (float)(rank + 1 + i % 7);
  if (rank == 0) printf("# openmpi  bytes  time_us  busbw_GBps  exact\n");
  for (int a = 1; a < argc; ++a) {
    long bytes = atol(argv[a]);
    int count = (int)(bytes / (long)sizeof(float));
    if (count < 1) count = 1;
    int iters = itersFor(bytes);
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int exact = 1;
    for (int i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < size; ++r) want += (float)(r + 1 + i % 7);
      if (out[i] != want) exact = 0;
    }
    if (rank == 0) {
      double busbw = (double)bytes / slowest / 1e9 * 2.0 * (size - 1) / size;
      printf("openmpi %ld %.2f %.3f %s\n", bytes, slowest * 1e6, busbw, exact ? "yes" : "NO");
      fflush(stdout);
    }
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
