/* An NCCL program, compiled against NVIDIA's own nccl.h and linked to Braid's
 * libnccl.so.2, run as real processes on host buffers with the NULL stream
 * (Braid's extension; NCCL itself needs device memory).
 *
 *   nccl_dropin_check SCENARIO [NRANKS]
 *
 * Forks NRANKS ranks (rank 0 makes the unique id and hands it over a pipe,
 * as an MPI program would broadcast it); exits 0 when every rank passed. A
 * failed check prints the rank, the line and the result's text. Expected
 * values are computed here from the inputs, not by the library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int gRank = -1;

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", gRank, __FILE__, __LINE__, #cond); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define NCCLCHECK(call)                                                                   \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != ncclSuccess) {                                                              \
      fprintf(stderr, "rank %d: %s:%d: %s returned %d (%s): %s\n", gRank, __FILE__, __LINE__, \
              #call, (int)r_, ncclGetErrorString(r_), ncclGetLastError(NULL));             \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define EXPECT_RESULT(want, call)                                                         \
  do {                                                                                    \
    ncclResult_t r_ = (call);                                                             \
    if (r_ != (want)) {                                                                   \
      fprintf(stderr, "rank %d: %s:%d: %s returned %d, expected %d (%s)\n", gRank, __FILE__, \
              __LINE__, #call, (int)r_, (int)(want), #want);                              \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* ---- the job: ranks as processes, the unique id over pipes ---- */

static int gIdPipes[64][2];
static int gGoPipe[2]; /* rank 1 -> rank 0: "start your init now" (non-blocking scenario) */

static ncclUniqueId shareId(int rank, int nranks) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCLCHECK(ncclGetUniqueId(&id));
    for (int r = 1; r < nranks; ++r) CHECK(write(gIdPipes[r][1], &id, sizeof(id)) == sizeof(id));
  } else {
    CHECK(read(gIdPipes[rank][0], &id, sizeof(id)) == sizeof(id));
  }
  return id;
}

static ncclComm_t initComm(int rank, int nranks) {
  ncclUniqueId id = shareId(rank, nranks);
  ncclComm_t comm = NULL;
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int n = -1, me = -1;
  NCCLCHECK(ncclCommCount(comm, &n));
  NCCLCHECK(ncclCommUserRank(comm, &me));
  CHECK(n == nranks && me == rank);
  return comm;
}

typedef void (*Scenario)(int rank, int nranks);

static int runRanks(Scenario body, int nranks) {
  CHECK(nranks >= 1 && nranks <= 64);
  for (int r = 0; r < nranks; ++r) CHECK(pipe(gIdPipes[r]) == 0);
  CHECK(pipe(gGoPipe) == 0);
  pid_t pids[64];
  for (int r = 0; r < nranks; ++r) {
    fflush(stdout);
    fflush(stderr);
    pids[r] = fork();
    CHECK(pids[r] >= 0);
    if (pids[r] == 0) {
      gRank = r;
      alarm(120); /* a hang fails the run instead of stalling it */
      body(r, nranks);
      fflush(stdout);
      _exit(0);
    }
  }
  int failed = 0;
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    CHECK(waitpid(pids[r], &status, 0) == pids[r]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d failed (%s %d)\n", r, WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      failed = 1;
    }
  }
  return failed;
}

/* ---- half and bfloat16 for the small integers the checks use (exact) ---- */

static uint16_t toHalf(float f) {
  if (f == 0) return 0;
  uint16_t sign = f < 0 ? 0x8000 : 0;
  if (f < 0) f = -f;
  int e = 0;
  while (f >= 2) { f /= 2; ++e; }
  while (f < 1) { f *= 2; --e; }
  return sign | (uint16_t)((e + 15) << 10) | (uint16_t)((f - 1) * 1024);
}
static float fromHalf(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  float m = (h & 0x3ff) / 1024.0f;
  float v = e == 0 ? m / 16384.0f : (1 + m) * (float)(e >= 15 ? (1 << (e - 15)) : 1.0 / (1 << (15 - e)));
  return (h & 0x8000) ? -v : v;
}
static uint16_t toBf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return (uint16_t)(x >> 16); /* exact for the small integers used */
}
static float fromBf16(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* float8 (e4m3: 3 mantissa bits, bias 7; e5m2: 2 bits, bias 15) for small
 * integers, which both hold exactly up to 8. */
static uint8_t toFp8(float f, int manBits, int bias) {
  if (f == 0) return 0;
  uint8_t sign = f < 0 ? 0x80 : 0;
  if (f < 0) f = -f;
  int e = 0;
  while (f >= 2) { f /= 2; ++e; }
  return sign | (uint8_t)((e + bias) << manBits) | (uint8_t)((f - 1) * (1 << manBits));
}
static float fromFp8(uint8_t b, int manBits, int bias) {
  int e = (b & 0x7f) >> manBits;
  float m = 1 + (float)(b & ((1 << manBits) - 1)) / (float)(1 << manBits);
  float v = (b & 0x7f) == 0 ? 0 : m * (float)(1 << e) / (float)(1 << bias);
  return (b & 0x80) ? -v : v;
}

static void put(void* buf, size_t i, ncclDataType_t t, double v) {
  switch (t) {
    case ncclInt8: ((int8_t*)buf)[i] = (int8_t)v; break;
    case ncclUint8: ((uint8_t*)buf)[i] = (uint8_t)v; break;
    case ncclInt32: ((int32_t*)buf)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t*)buf)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t*)buf)[i] = (int64_t)v; break;
    case ncclUint64: ((uint64_t*)buf)[i] = (uint64_t)v; break;
    case ncclFloat16: ((uint16_t*)buf)[i] = toHalf((float)v); break;
    case ncclFloat32: ((float*)buf)[i] = (float)v; break;
    case ncclFloat64: ((double*)buf)[i] = v; break;
    case ncclBfloat16: ((uint16_t*)buf)[i] = toBf16((float)v); break;
    case ncclFloat8e4m3: ((uint8_t*)buf)[i] = toFp8((float)v, 3, 7); break;
    case ncclFloat8e5m2: ((uint8_t*)buf)[i] = toFp8((float)v, 2, 15); break;
    default: CHECK(0);
  }
}

static double get(const void* buf, size_t i, ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return ((const int8_t*)buf)[i];
    case ncclUint8: return ((const uint8_t*)buf)[i];
    case ncclInt32: return ((const int32_t*)buf)[i];
    case ncclUint32: return ((const uint32_t*)buf)[i];
    case ncclInt64: return (double)((const int64_t*)buf)[i];
    case ncclUint64: return (double)((const uint64_t*)buf)[i];
    case ncclFloat16: return fromHalf(((const uint16_t*)buf)[i]);
    case ncclFloat32: return ((const float*)buf)[i];
    case ncclFloat64: return ((const double*)buf)[i];
    case ncclBfloat16: return fromBf16(((const uint16_t*)buf)[i]);
    case ncclFloat8e4m3: return fromFp8(((const uint8_t*)buf)[i], 3, 7);
    case ncclFloat8e5m2: return fromFp8(((const uint8_t*)buf)[i], 2, 15);
    default: CHECK(0);
  }
  return 0;
}

static int isSigned(ncclDataType_t t) {
  return t != ncclUint8 && t != ncclUint32 && t != ncclUint64;
}

/* ---- scenarios ---- */

/* Input of rank r at element i: small integers, so every result is exact. */
static int32_t val(int r, size_t i) { return (int32_t)((i * 7 + (size_t)r * 13) % 101) - 50; }

static void collectives(int rank, int n) {
  ncclComm_t comm = initComm(rank, n);
  const size_t count = 1037; /* odd, not a multiple of nranks */
  int32_t* send = calloc(count * n, sizeof(int32_t));
  int32_t* recv = calloc(count * n, sizeof(int32_t));
  CHECK(send && recv);
  for (size_t i = 0; i < count * n; ++i) send[i] = val(rank, i);

  /* all-reduce, out of place then in place */
  NCCLCHECK(ncclAllReduce(send, recv, count, ncclInt32, ncclSum, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += val(r, i);
    CHECK(recv[i] == want);
  }
  memcpy(recv, send, count * sizeof(int32_t));
  NCCLCHECK(ncclAllReduce(recv, recv, count, ncclInt32, ncclMax, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    int32_t want = val(0, i);
    for (int r = 1; r < n; ++r) want = val(r, i) > want ? val(r, i) : want;
    CHECK(recv[i] == want);
  }

  /* all-gather, out of place then in place */
  NCCLCHECK(ncclAllGather(send, recv, count, ncclInt32, comm, NULL));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) CHECK(recv[r * count + i] == val(r, i));
  memset(recv, 0, count * n * sizeof(int32_t));
  memcpy(recv + rank * count, send, count * sizeof(int32_t));
  NCCLCHECK(ncclAllGather(recv + rank * count, recv, count, ncclInt32, comm, NULL));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) CHECK(recv[r * count + i] == val(r, i));

  /* reduce-scatter: block `rank` of the sum */
  NCCLCHECK(ncclReduceScatter(send, recv, count, ncclInt32, ncclSum, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += val(r, rank * count + i);
    CHECK(recv[i] == want);
  }

  /* broadcast from the last rank; deprecated in-place bcast from rank 0 */
  const int root = n - 1;
  memset(recv, 0, count * sizeof(int32_t));
  NCCLCHECK(ncclBroadcast(rank == root ? send : NULL, recv, count, ncclInt32, root, comm, NULL));
  for (size_t i = 0; i < count; ++i) CHECK(recv[i] == val(root, i));
  memcpy(recv, send, count * sizeof(int32_t));
  NCCLCHECK(ncclBcast(recv, count, ncclInt32, 0, comm, NULL));
  for (size_t i = 0; i < count; ++i) CHECK(recv[i] == val(0, i));

  /* reduce to rank 1 % n (recvbuff NULL elsewhere, as NCCL allows) */
  const int rroot = 1 % n;
  memset(recv, 0, count * sizeof(int32_t));
  NCCLCHECK(ncclReduce(send, rank == rroot ? recv : NULL, count, ncclInt32, ncclMin, rroot, comm,
                       NULL));
  if (rank == rroot) {
    for (size_t i = 0; i < count; ++i) {
      int32_t want = val(0, i);
      for (int r = 1; r < n; ++r) want = val(r, i) < want ? val(r, i) : want;
      CHECK(recv[i] == want);
    }
  }

  /* gather to rank 0, scatter from the last rank */
  memset(recv, 0, count * n * sizeof(int32_t));
  NCCLCHECK(ncclGather(send, rank == 0 ? recv : NULL, count, ncclInt32, 0, comm, NULL));
  if (rank == 0) {
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) CHECK(recv[r * count + i] == val(r, i));
  }
  memset(recv, 0, count * sizeof(int32_t));
  NCCLCHECK(ncclScatter(rank == root ? send : NULL, recv, count, ncclInt32, root, comm, NULL));
  for (size_t i = 0; i < count; ++i) CHECK(recv[i] == val(root, rank * count + i));

  /* all-to-all: block p of rank r's input lands in block r of rank p's output */
  NCCLCHECK(ncclAlltoAll(send, recv, count, ncclInt32, comm, NULL));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) CHECK(recv[r * count + i] == val(r, rank * count + i));

  /* send/recv in a ring, grouped; then a lone pair between ranks 0 and 1 */
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  memset(recv, 0, count * sizeof(int32_t));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(send, count, ncclInt32, next, comm, NULL));
  NCCLCHECK(ncclRecv(recv, count, ncclInt32, prev, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) CHECK(recv[i] == val(prev, i));
  if (n > 1 && rank <= 1) {
    memset(recv, 0, count * sizeof(int32_t));
    if (rank == 0) NCCLCHECK(ncclSend(send, 5, ncclInt32, 1, comm, NULL));
    if (rank == 1) NCCLCHECK(ncclRecv(recv, 5, ncclInt32, 0, comm, NULL));
    if (rank == 1) {
      for (size_t i = 0; i < 5; ++i) CHECK(recv[i] == val(0, i));
    }
  }

  /* a group of collectives runs together: two all-reduces into distinct buffers */
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(send, recv, count, ncclInt32, ncclSum, comm, NULL));
  NCCLCHECK(ncclAllReduce(send, recv + count, count, ncclInt32, ncclMin, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    int32_t sum = 0, mn = val(0, i);
    for (int r = 0; r < n; ++r) {
      sum += val(r, i);
      mn = val(r, i) < mn ? val(r, i) : mn;
    }
    CHECK(recv[i] == sum && recv[count + i] == mn);
  }

  /* ncclGroupSimulateEnd prices the group and runs nothing */
  ncclSimInfo_t small = NCCL_SIM_INFO_INITIALIZER, large = NCCL_SIM_INFO_INITIALIZER;
  recv[0] = -12345;
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(send, recv, 8, ncclInt32, ncclSum, comm, NULL));
  NCCLCHECK(ncclGroupSimulateEnd(&small));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(send, recv, count * n, ncclInt32, ncclSum, comm, NULL));
  NCCLCHECK(ncclGroupSimulateEnd(&large));
  ncclSimInfo_t p2p = NCCL_SIM_INFO_INITIALIZER;
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(send, count, ncclInt32, next, comm, NULL));
  NCCLCHECK(ncclRecv(recv, count, ncclInt32, prev, comm, NULL));
  NCCLCHECK(ncclGroupSimulateEnd(&p2p));
  CHECK(recv[0] == -12345);
  CHECK(small.estimatedTime > 0 && large.estimatedTime > small.estimatedTime);
  CHECK(p2p.estimatedTime > 0);

  /* registration: ncclMemAlloc memory as a window and a registered buffer */
  void* mem = NULL;
  NCCLCHECK(ncclMemAlloc(&mem, count * sizeof(int32_t)));
  CHECK(mem != NULL && (uintptr_t)mem % NCCL_WIN_REQUIRED_ALIGNMENT == 0);
  ncclWindow_t win = NULL;
  void* handle = NULL;
  NCCLCHECK(ncclCommWindowRegister(comm, mem, count * sizeof(int32_t), &win, NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclCommRegister(comm, send, count * sizeof(int32_t), &handle));
  NCCLCHECK(ncclAllReduce(send, mem, count, ncclInt32, ncclSum, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += val(r, i);
    CHECK(((int32_t*)mem)[i] == want);
  }
  NCCLCHECK(ncclCommDeregister(comm, handle));
  NCCLCHECK(ncclCommWindowDeregister(comm, win));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommWindowDeregister(comm, win));
  NCCLCHECK(ncclMemFree(mem));

  ncclResult_t async = ncclInternalError;
  NCCLCHECK(ncclCommGetAsyncError(comm, &async));
  CHECK(async == ncclSuccess);
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  free(send);
  free(recv);
  printf("rank %d: collectives ok\n", rank);
}

/* Input of rank r at element i for all-reduce with op: integers whose every
 * partial result is exact in the type (float8 holds exactly 0..8 and the
 * powers of two; Braid reduces float8 step by step, rounding each time). */
static double dtypeInput(ncclDataType_t type, ncclRedOp_t op, int n, int r, size_t i) {
  const int fp8 = type == ncclFloat8e4m3 || type == ncclFloat8e5m2;
  if (op == ncclProd) return 1 + (double)((i + r) % 2);
  if (op == ncclAvg) return fp8 ? (double)(i % 3) : (double)(i % 7) + (r == 0 ? n : 0);
  const int span = fp8 ? 3 : 11;
  return (double)((i + 3 * r) % span) - (isSigned(type) ? span / 2 : 0);
}

/* Every datatype x op for all-reduce. */
static void dtypes(int rank, int n) {
  ncclComm_t comm = initComm(rank, n);
  const size_t count = 263;
  char* in = malloc(count * 8);
  char* out = malloc(count * 8);
  CHECK(in && out && n <= 4);
  for (int t = ncclInt8; t < ncclNumTypes; ++t) {
    const ncclDataType_t type = (ncclDataType_t)t;
    for (int o = ncclSum; o <= ncclAvg; ++o) {
      const ncclRedOp_t op = (ncclRedOp_t)o;
      for (size_t i = 0; i < count; ++i) put(in, i, type, dtypeInput(type, op, n, rank, i));
      memset(out, 0x7f, count * 8);
      NCCLCHECK(ncclAllReduce(in, out, count, type, op, comm, NULL));
      for (size_t i = 0; i < count; ++i) {
        double want = op == ncclProd ? 1 : 0;
        for (int r = 0; r < n; ++r) {
          const double v = dtypeInput(type, op, n, r, i);
          if (op == ncclSum || op == ncclAvg) want += v;
          if (op == ncclProd) want *= v;
          if (op == ncclMax && (r == 0 || v > want)) want = v;
          if (op == ncclMin && (r == 0 || v < want)) want = v;
        }
        if (op == ncclAvg) want /= n; /* the inputs make every average whole */
        if (get(out, i, type) != want) {
          fprintf(stderr, "rank %d: type %d op %d element %zu: got %g, want %g\n", rank, t, o, i,
                  get(out, i, type), want);
          exit(1);
        }
      }
    }
  }
  NCCLCHECK(ncclCommDestroy(comm));
  free(in);
  free(out);
  printf("rank %d: dtypes ok\n", rank);
}

/* Non-blocking creation: ncclInProgress until every rank joined, then
 * ncclSuccess. Rank 0 joins only once rank 1 has seen the in-progress state
 * (and been refused a collective), so that state is certain. */
static void nonblocking(int rank, int n) {
  ncclUniqueId id = shareId(rank, n);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  char go = 0;
  if (rank == 0) CHECK(read(gGoPipe[0], &go, 1) == 1);
  EXPECT_RESULT(ncclInProgress, ncclCommInitRankConfig(&comm, n, id, rank, &config));
  CHECK(comm != NULL);
  ncclResult_t state = ncclInternalError;
  if (rank == 1) {
    NCCLCHECK(ncclCommGetAsyncError(comm, &state));
    CHECK(state == ncclInProgress);
    int x = 1;
    EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, NULL));
    CHECK(strstr(ncclGetLastError(comm), "not ready") != NULL);
    CHECK(write(gGoPipe[1], "g", 1) == 1);
  }
  int polls = 0;
  do {
    NCCLCHECK(ncclCommGetAsyncError(comm, &state));
    CHECK(state == ncclInProgress || state == ncclSuccess);
    if (state == ncclInProgress) usleep(1000);
    ++polls;
  } while (state == ncclInProgress);
  int64_t v = rank + 1, sum = 0;
  NCCLCHECK(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, comm, NULL));
  CHECK(sum == (int64_t)n * (n + 1) / 2);

  /* a non-blocking split: the child is in progress, then ready */
  ncclComm_t child = NULL;
  ncclResult_t r = ncclCommSplit(comm, 0, rank, &child, NULL); /* inherits blocking = 0 */
  CHECK(r == ncclInProgress || r == ncclSuccess);
  CHECK(child != NULL);
  do {
    NCCLCHECK(ncclCommGetAsyncError(child, &state));
    CHECK(state == ncclInProgress || state == ncclSuccess);
  } while (state == ncclInProgress);
  do {
    NCCLCHECK(ncclCommGetAsyncError(comm, &state));
  } while (state == ncclInProgress);
  CHECK(state == ncclSuccess);
  sum = 0;
  NCCLCHECK(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, child, NULL));
  CHECK(sum == (int64_t)n * (n + 1) / 2);
  NCCLCHECK(ncclCommDestroy(child));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: nonblocking ok (%d polls)\n", rank, polls);
}

/* Split by parity, ordered by descending rank; with 4 ranks, rank 3 takes
 * no color. Then shrink without the last rank. */
static void split(int rank, int n) {
  ncclComm_t comm = initComm(rank, n);
  const int color = (n >= 4 && rank == 3) ? NCCL_SPLIT_NOCOLOR : rank % 2;
  ncclComm_t sub = (ncclComm_t)(uintptr_t)1;
  NCCLCHECK(ncclCommSplit(comm, color, -rank, &sub, NULL));
  if (color == NCCL_SPLIT_NOCOLOR) {
    CHECK(sub == NULL);
  } else {
    int members[64], m = 0;
    for (int r = n - 1; r >= 0; --r) {
      if ((n >= 4 && r == 3) || r % 2 != color) continue;
      members[m++] = r;
    }
    int count = -1, me = -1;
    NCCLCHECK(ncclCommCount(sub, &count));
    NCCLCHECK(ncclCommUserRank(sub, &me));
    CHECK(count == m && members[me] == rank);
    int32_t v = 100 + rank, sum = 0, want = 0;
    for (int i = 0; i < m; ++i) want += 100 + members[i];
    NCCLCHECK(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, sub, NULL));
    CHECK(sum == want);
    int device = -1;
    NCCLCHECK(ncclCommCuDevice(sub, &device));
    CHECK(device == 0);
    NCCLCHECK(ncclCommDestroy(sub));
  }
  /* the same split inside a group: ncclGroupEnd returns with it made (and
   * the parent free again, on the rank that took no color too) */
  ncclComm_t grouped = NULL;
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclCommSplit(comm, color, rank, &grouped, NULL));
  NCCLCHECK(ncclGroupEnd());
  CHECK((grouped == NULL) == (color == NCCL_SPLIT_NOCOLOR));
  int32_t one = 1, total = 0;
  NCCLCHECK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(total == n);
  if (grouped != NULL) {
    int count = -1;
    NCCLCHECK(ncclCommCount(grouped, &count));
    NCCLCHECK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, grouped, NULL));
    CHECK(total == count);
    NCCLCHECK(ncclCommDestroy(grouped));
  }
  if (n > 1) {
    int exclude = n - 1;
    if (rank != exclude) {
      ncclComm_t shrunk = NULL;
      NCCLCHECK(ncclCommShrink(comm, &exclude, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
      int count = -1, me = -1;
      NCCLCHECK(ncclCommCount(shrunk, &count));
      NCCLCHECK(ncclCommUserRank(shrunk, &me));
      CHECK(count == n - 1 && me == rank);
      int32_t v = rank + 1, sum = 0;
      NCCLCHECK(ncclAllReduce(&v, &sum, 1, ncclInt32, ncclSum, shrunk, NULL));
      CHECK(sum == (n - 1) * n / 2);
      NCCLCHECK(ncclCommDestroy(shrunk));
    }
  }
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: split ok\n", rank);
}

/* Premul-sum: each rank scales by its own scalar before the sum. */
static void premul(int rank, int n) {
  ncclComm_t comm = initComm(rank, n);
  const size_t count = 301;
  float in[301 * 8], out[301 * 8];
  for (size_t i = 0; i < count * n; ++i) in[i] = (float)((i % 9) + rank);

  /* scalar held by value: changing it later changes nothing */
  float scalar = (float)(rank + 1);
  ncclRedOp_t op;
  NCCLCHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  CHECK((int)op >= ncclNumOps);
  scalar = 1000;
  NCCLCHECK(ncclAllReduce(in, out, count, ncclFloat32, op, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += (float)(r + 1) * (float)((i % 9) + r);
    CHECK(out[i] == want);
  }
  /* in place, and as reduce-scatter and reduce */
  float inplace[301];
  memcpy(inplace, in, sizeof(inplace));
  NCCLCHECK(ncclAllReduce(inplace, inplace, count, ncclFloat32, op, comm, NULL));
  CHECK(memcmp(inplace, out, sizeof(inplace)) == 0);
  NCCLCHECK(ncclReduceScatter(in, out, count, ncclFloat32, op, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += (float)(r + 1) * (float)(((rank * count + i) % 9) + r);
    CHECK(out[i] == want);
  }
  NCCLCHECK(ncclReduce(in, rank == 0 ? out : NULL, count, ncclFloat32, op, 0, comm, NULL));
  if (rank == 0) {
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += (float)(r + 1) * (float)((i % 9) + r);
      CHECK(out[i] == want);
    }
  }
  /* the op belongs to its datatype */
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(in, out, count, ncclFloat64, op, comm, NULL));
  NCCLCHECK(ncclRedOpDestroy(op, comm));
  /* destroyed inside a group before ncclGroupEnd: the call made before still scales, a
     call made after is refused at once */
  scalar = (float)(rank + 1);
  NCCLCHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  memset(out, 0, sizeof(out));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(in, out, count, ncclFloat32, op, comm, NULL));
  NCCLCHECK(ncclRedOpDestroy(op, comm));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(in, inplace, count, ncclFloat32, op, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += (float)(r + 1) * (float)((i % 9) + r);
    CHECK(out[i] == want);
  }
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(in, out, count, ncclFloat32, op, comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclRedOpDestroy(ncclSum, comm));

  /* scalar by pointer (ncclScalarDevice): read when the call runs */
  int32_t iscalar = 0;
  int32_t iin[64], iout[64];
  for (int i = 0; i < 64; ++i) iin[i] = i - 20 + rank;
  NCCLCHECK(ncclRedOpCreatePreMulSum(&op, &iscalar, ncclInt32, ncclScalarDevice, comm));
  iscalar = rank == 0 ? 3 : -2;
  NCCLCHECK(ncclAllReduce(iin, iout, 64, ncclInt32, op, comm, NULL));
  for (int i = 0; i < 64; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += (r == 0 ? 3 : -2) * (i - 20 + r);
    CHECK(iout[i] == want);
  }
  NCCLCHECK(ncclRedOpDestroy(op, comm));

  /* half: each rank scales by 0.5, exact */
  uint16_t h = toHalf(0.5f), hin[32], hout[32];
  for (int i = 0; i < 32; ++i) hin[i] = toHalf((float)(2 * i + 2 * rank));
  NCCLCHECK(ncclRedOpCreatePreMulSum(&op, &h, ncclFloat16, ncclScalarHostImmediate, comm));
  NCCLCHECK(ncclAllReduce(hin, hout, 32, ncclFloat16, op, comm, NULL));
  for (int i = 0; i < 32; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += (float)(i + r);
    CHECK(fromHalf(hout[i]) == want);
  }
  NCCLCHECK(ncclRedOpDestroy(op, comm));

  /* float8 e4m3: every rank doubles 0s and 1s (sums up to 8 stay exact) */
  uint8_t two = toFp8(2, 3, 7), fin[40], fout[40];
  for (int i = 0; i < 40; ++i) fin[i] = toFp8((float)((i + rank) % 2), 3, 7);
  NCCLCHECK(ncclRedOpCreatePreMulSum(&op, &two, ncclFloat8e4m3, ncclScalarHostImmediate, comm));
  NCCLCHECK(ncclAllReduce(fin, fout, 40, ncclFloat8e4m3, op, comm, NULL));
  for (int i = 0; i < 40; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += 2.0f * (float)((i + r) % 2);
    CHECK(fromFp8(fout[i], 3, 7) == want);
  }
  NCCLCHECK(ncclRedOpDestroy(op, comm));
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: premul ok\n", rank);
}

/* Bad arguments return NCCL's codes, change nothing, and say why. One rank. */
static void badargs(int rank, int n) {
  (void)n;
  int x = 0;
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, NULL, NULL));
  CHECK(strstr(ncclGetLastError(NULL), "comm is NULL") != NULL);
  EXPECT_RESULT(ncclInvalidArgument, ncclSend(&x, 1, ncclInt32, 0, NULL, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommCount(NULL, &x));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommDestroy(NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclGetVersion(NULL));
  EXPECT_RESULT(ncclInvalidUsage, ncclGroupEnd());

  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  ncclComm_t sentinel = (ncclComm_t)(uintptr_t)0x1234;
  ncclComm_t comm = sentinel;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0xdeadbeef;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &config));
  CHECK(comm == sentinel);
  CHECK(strstr(ncclGetLastError(NULL), "NCCL_CONFIG_INITIALIZER") != NULL);
  ncclConfig_t old = NCCL_CONFIG_INITIALIZER;
  old.version = 21300;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &old));
  ncclConfig_t small = NCCL_CONFIG_INITIALIZER;
  small.size = 8;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &small));
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 2;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRankConfig(&comm, 1, id, 0, &blocking));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRank(&comm, 1, id, 1));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRank(&comm, 0, id, 0));
  CHECK(comm == sentinel);

  ncclConfig_t good = NCCL_CONFIG_INITIALIZER;
  good.commName = "badargs";
  NCCLCHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &good));
  int32_t a[4] = {1, 2, 3, 4}, b[4] = {0, 0, 0, 0};
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(a, b, 4, (ncclDataType_t)99, ncclSum, comm, NULL));
  CHECK(strstr(ncclGetLastError(comm), "datatype 99") != NULL);
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(a, b, 4, (ncclDataType_t)-1, ncclSum, comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(a, b, 4, ncclInt32, (ncclRedOp_t)77, comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(a, NULL, 4, ncclInt32, ncclSum, comm, NULL));
  CHECK(strstr(ncclGetLastError(comm), "recvbuff is NULL") != NULL); /* Braid's message */
  EXPECT_RESULT(ncclInvalidArgument, ncclBroadcast(a, b, 4, ncclInt32, 3, comm, NULL));
  EXPECT_RESULT(ncclInvalidArgument, ncclSend(a, 4, ncclInt32, 5, comm, NULL));
  CHECK(b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0); /* nothing changed */
  NCCLCHECK(ncclAllReduce(a, b, 4, ncclInt32, ncclSum, comm, NULL));
  CHECK(b[0] == 1 && b[3] == 4); /* and the communicator still works */

  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  sim.magic = 1;
  NCCLCHECK(ncclGroupStart());
  EXPECT_RESULT(ncclInvalidArgument, ncclGroupSimulateEnd(&sim));
  NCCLCHECK(ncclGroupEnd());
  EXPECT_RESULT(ncclInvalidArgument, ncclCommRevoke(comm, 7));
  ncclWindow_t win;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommWindowRegister(comm, a + 1, 4, &win, NCCL_WIN_COLL_SYMMETRIC));
  EXPECT_RESULT(ncclInvalidArgument, ncclCommWindowRegister(comm, a, 4, &win, 0x10));
  ncclRedOp_t op;
  EXPECT_RESULT(ncclInvalidArgument,
                ncclRedOpCreatePreMulSum(&op, NULL, ncclFloat32, ncclScalarHostImmediate, comm));
  ncclComm_t none = NULL;
  EXPECT_RESULT(ncclInvalidArgument, ncclCommSplit(comm, -5, 0, &none, NULL));
  int device = -1;
  NCCLCHECK(ncclCommCuDevice(comm, &device));
  CHECK(device == 0);

  /* revoked: new work refused; destroy still works */
  NCCLCHECK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
  EXPECT_RESULT(ncclInvalidUsage, ncclAllReduce(a, b, 4, ncclInt32, ncclSum, comm, NULL));
  EXPECT_RESULT(ncclInvalidUsage, ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  /* a destroyed communicator is an error, not a crash */
  EXPECT_RESULT(ncclInvalidArgument, ncclAllReduce(a, b, 4, ncclInt32, ncclSum, comm, NULL));
  CHECK(strstr(ncclGetLastError(NULL), "not a live communicator") != NULL);
  EXPECT_RESULT(ncclInvalidArgument, ncclCommDestroy(comm));

  /* the scalable init with one id; none is an error */
  EXPECT_RESULT(ncclInvalidArgument, ncclCommInitRankScalable(&comm, 1, 0, 0, &id, NULL));
  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclCommInitRankScalable(&comm, 1, 0, 1, &id, NULL));
  NCCLCHECK(ncclAllReduce(a, b, 4, ncclInt32, ncclSum, comm, NULL));
  CHECK(b[0] == 1 && b[3] == 4);
  NCCLCHECK(ncclCommDestroy(comm));

  /* abort works on a live communicator too */
  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclCommInitRank(&comm, 1, id, 0));
  NCCLCHECK(ncclCommAbort(comm));
  printf("rank %d: badargs ok\n", rank);
}

/* NCCL's result codes, texts and version. */
static void strings(int rank, int n) {
  (void)n;
  static const char* const want[] = {
      "no error",
      "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
      "unhandled system error (run with NCCL_DEBUG=INFO for details)",
      "internal error - please report this issue to the NCCL developers",
      "invalid argument (run with NCCL_DEBUG=WARN for details)",
      "invalid usage (run with NCCL_DEBUG=WARN for details)",
      "remote process exited or there was a network error",
      "NCCL operation in progress",
  };
  CHECK(ncclSuccess == 0 && ncclInProgress == 7 && ncclNumResults == 8);
  for (int r = 0; r < ncclNumResults; ++r) {
    CHECK(strcmp(ncclGetErrorString((ncclResult_t)r), want[r]) == 0);
    CHECK(strcmp(pncclGetErrorString((ncclResult_t)r), want[r]) == 0);
  }
  CHECK(strcmp(ncclGetErrorString(ncclNumResults), "unknown result code") == 0);
  int version = 0;
  NCCLCHECK(ncclGetVersion(&version));
  CHECK(version == NCCL_VERSION_CODE);
  CHECK(version == NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  /* which library this is: the path the loader picked */
  Dl_info info;
  CHECK(dladdr((void*)ncclGetVersion, &info) != 0 && info.dli_fname != NULL);
  printf("library: %s\n", info.dli_fname);
  printf("rank %d: strings ok\n", rank);
}

/* One process, several ranks: ncclCommInitAll, then a group over all of them. */
static void initall(int rank, int n) {
  ncclComm_t comms[8];
  int devs[8];
  CHECK(n >= 1 && n <= 8);
  for (int i = 0; i < 8; ++i) devs[i] = 10 + i;
  NCCLCHECK(ncclCommInitAll(comms, n, devs));
  int32_t in[8][16], out[8][16];
  for (int c = 0; c < n; ++c) {
    int count = -1, me = -1, device = -1;
    NCCLCHECK(ncclCommCount(comms[c], &count));
    NCCLCHECK(ncclCommUserRank(comms[c], &me));
    NCCLCHECK(ncclCommCuDevice(comms[c], &device));
    CHECK(count == n && me == c && device == 10 + c);
    for (int i = 0; i < 16; ++i) in[c][i] = c * 100 + i;
  }
  NCCLCHECK(ncclGroupStart());
  for (int c = 0; c < n; ++c) {
    NCCLCHECK(ncclAllReduce(in[c], out[c], 16, ncclInt32, ncclSum, comms[c], NULL));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int c = 0; c < n; ++c)
    for (int i = 0; i < 16; ++i) CHECK(out[c][i] == 100 * n * (n - 1) / 2 + n * i);
  for (int c = 0; c < n; ++c) NCCLCHECK(ncclCommDestroy(comms[c]));

  /* the same through ncclCommInitRank inside a group */
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclGroupStart());
  for (int c = 0; c < n; ++c) NCCLCHECK(ncclCommInitRank(&comms[c], n, id, c));
  NCCLCHECK(ncclGroupEnd());
  NCCLCHECK(ncclGroupStart());
  for (int c = 0; c < n; ++c) {
    NCCLCHECK(ncclAllReduce(in[c], out[c], 16, ncclInt32, ncclMax, comms[c], NULL));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int c = 0; c < n; ++c)
    for (int i = 0; i < 16; ++i) CHECK(out[c][i] == 100 * (n - 1) + i);
  for (int c = 0; c < n; ++c) NCCLCHECK(ncclCommDestroy(comms[c]));
  printf("rank %d: initall ok\n", rank);
}

/* The watchdog pattern: one thread blocked in a collective its peer never
 * joins, another polling ncclCommGetAsyncError and then aborting. The
 * blocked call returns an error (no hang), the handle is dead afterwards. */
static void* watchdog(void* arg) {
  ncclComm_t comm = (ncclComm_t)arg;
  for (int i = 0; i < 50; ++i) {
    ncclResult_t state = ncclInternalError;
    NCCLCHECK(ncclCommGetAsyncError(comm, &state));
    CHECK(state == ncclSuccess);
    usleep(2000);
  }
  NCCLCHECK(ncclCommAbort(comm));
  return NULL;
}

static void abortscenario(int rank, int n) {
  ncclComm_t comm = initComm(rank, n);
  char done = 0;
  if (rank == 0) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, watchdog, comm) == 0);
    int32_t x = 1, y = 0;
    ncclResult_t r = ncclAllReduce(&x, &y, 1, ncclInt32, ncclSum, comm, NULL);
    CHECK(r != ncclSuccess && r != ncclInProgress);
    CHECK(pthread_join(t, NULL) == 0);
    EXPECT_RESULT(ncclInvalidArgument, ncclCommGetAsyncError(comm, &r));
    for (int p = 1; p < n; ++p) CHECK(write(gGoPipe[1], "d", 1) == 1);
  } else {
    /* never joins the all-reduce; leaves once rank 0 is done */
    CHECK(read(gGoPipe[0], &done, 1) == 1);
    NCCLCHECK(ncclCommAbort(comm));
  }
  printf("rank %d: abort ok\n", rank);
}

/* nccl-tests' sendrecv, out of place and in place (one buffer sent to the next rank and
 * received into from the previous, in a group; on one rank a send to itself), then sends
 * to itself in place and swapping two buffers. Each send carries the data from before its
 * group. A send to itself outside a group is refused at once. */
static void sendrecv(int rank, int n) {
  ncclComm_t comm = initComm(rank, n);
  const size_t count = 300007; /* more than a FIFO holds */
  int32_t* a = calloc(3 * count, sizeof(int32_t));
  int32_t* b = calloc(count, sizeof(int32_t));
  CHECK(a && b);
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  for (int inPlace = 0; inPlace <= 1; ++inPlace) {
    for (size_t i = 0; i < count; ++i) a[i] = val(rank, i);
    int32_t* recv = inPlace ? a : b;
    NCCLCHECK(ncclGroupStart());
    NCCLCHECK(ncclSend(a, count, ncclInt32, next, comm, NULL));
    NCCLCHECK(ncclRecv(recv, count, ncclInt32, prev, comm, NULL));
    NCCLCHECK(ncclGroupEnd());
    for (size_t i = 0; i < count; ++i) CHECK(recv[i] == val(prev, i));
  }
  for (size_t i = 0; i < 3 * count; ++i) a[i] = val(rank, i);
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(a, count, ncclInt32, rank, comm, NULL));
  NCCLCHECK(ncclRecv(a, count, ncclInt32, rank, comm, NULL));
  NCCLCHECK(ncclSend(a + count, count, ncclInt32, rank, comm, NULL));
  NCCLCHECK(ncclRecv(a + 2 * count, count, ncclInt32, rank, comm, NULL));
  NCCLCHECK(ncclSend(a + 2 * count, count, ncclInt32, rank, comm, NULL));
  NCCLCHECK(ncclRecv(a + count, count, ncclInt32, rank, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  for (size_t i = 0; i < count; ++i) {
    CHECK(a[i] == val(rank, i));
    CHECK(a[count + i] == val(rank, 2 * count + i) && a[2 * count + i] == val(rank, count + i));
  }
  EXPECT_RESULT(ncclInvalidUsage, ncclSend(a, count, ncclInt32, rank, comm, NULL));
  ncclResult_t async = ncclInternalError;
  NCCLCHECK(ncclCommGetAsyncError(comm, &async));
  CHECK(async == ncclSuccess);
  NCCLCHECK(ncclAllReduce(a, b, 1, ncclInt32, ncclSum, comm, NULL));
  free(a);
  free(b);
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: sendrecv ok\n", rank);
}

/* Calls of known sizes for a profiler plugin (NCCL_PROFILER_PLUGIN) to report: four
 * collectives alone, a send/receive pair in a group, two all-reduces in a group. */
static void profiled(int rank, int n) {
  ncclComm_t comm = initComm(rank, n);
  int32_t* a = calloc(4096, sizeof(int32_t));
  int32_t* b = calloc(4096 * n, sizeof(int32_t));
  CHECK(a && b);
  NCCLCHECK(ncclAllReduce(a, b, 1000, ncclInt32, ncclSum, comm, NULL));
  NCCLCHECK(ncclAllGather(a, b, 300, ncclFloat32, comm, NULL));
  NCCLCHECK(ncclBroadcast(a, b, 77, ncclInt32, n - 1, comm, NULL));
  NCCLCHECK(ncclReduceScatter(a, b, 50, ncclFloat32, ncclSum, comm, NULL));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(a, 11, ncclInt32, (rank + 1) % n, comm, NULL));
  NCCLCHECK(ncclRecv(b, 11, ncclInt32, (rank + n - 1) % n, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(a, b, 5, ncclInt32, ncclSum, comm, NULL));
  NCCLCHECK(ncclAllReduce(a, b + 5, 6, ncclInt32, ncclMax, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  NCCLCHECK(ncclCommDestroy(comm));
  free(a);
  free(b);
  printf("rank %d: profiled ok\n", rank);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s collectives|dtypes|nonblocking|split|premul|abort|sendrecv|profiled|badargs|strings|initall "
            "[nranks]\n", argv[0]);
    return 2;
  }
  const int nranks = argc > 2 ? atoi(argv[2]) : 2;
  const char* name = argv[1];
  /* single-process scenarios run in this process */
  if (strcmp(name, "badargs") == 0) { gRank = 0; badargs(0, 1); return 0; }
  if (strcmp(name, "strings") == 0) { gRank = 0; strings(0, 1); return 0; }
  if (strcmp(name, "initall") == 0) { gRank = 0; initall(0, nranks); return 0; }
  Scenario body = NULL;
  if (strcmp(name, "collectives") == 0) body = collectives;
  if (strcmp(name, "dtypes") == 0) body = dtypes;
  if (strcmp(name, "nonblocking") == 0) body = nonblocking;
  if (strcmp(name, "split") == 0) body = split;
  if (strcmp(name, "premul") == 0) body = premul;
  if (strcmp(name, "abort") == 0) body = abortscenario;
  if (strcmp(name, "sendrecv") == 0) body = sendrecv;
  if (strcmp(name, "profiled") == 0) body = profiled;
  if (body == NULL) {
    fprintf(stderr, "unknown scenario %s\n", name);
    return 2;
  }
  return runRanks(body, nranks);
}
