/* All-reduce from C: every rank contributes rank + 1 + i at index i; the sum is checked.
 * Run under a launcher: braidrun -n 4 ./allreduce (or torchrun, mpirun, srun). */
#include <braid/braid.h>
#include <stdio.h>
#include <stdlib.h>

/* On failure, print where, the code's name and Braid's message (which names the fix). */
#define CHECK(call, comm)                                                          \
  do {                                                                             \
    braidResult_t r_ = (call);                                                     \
    if (r_ != braidSuccess) {                                                      \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,            \
              braidGetErrorString(r_), braidGetLastError(comm));                  \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

int main(void) {
  enum { kCount = 1 << 20 };
  braidComm_t comm = NULL;
  int rank, nranks;
  CHECK(braidCommInitFromEnv(&comm, NULL), NULL);
  CHECK(braidCommUserRank(comm, &rank), comm);
  CHECK(braidCommCount(comm, &nranks), comm);

  float* x = malloc(kCount * sizeof(float));
  if (!x) return 1;
  for (int i = 0; i < kCount; ++i) x[i] = (float)(rank + 1 + i % 1000);
  /* In place, on the NULL stream: complete when it returns. */
  CHECK(braidAllReduce(x, x, kCount, braidFloat32, braidSum, comm, NULL), comm);

  int wrong = 0; /* small integers: float sums are exact */
  for (int i = 0; i < kCount; ++i)
    wrong += x[i] != (float)(nranks * (nranks + 1) / 2 + nranks * (i % 1000));
  printf("rank %d of %d: all-reduce of %d floats %s\n", rank, nranks, kCount,
         wrong ? "WRONG" : "exact");
  free(x);
  CHECK(braidCommDestroy(comm), NULL);
  return wrong ? 1 : 0;
}
