/* Braid: collective communication for host (CPU) and GPU memory.
 *
 * This header is Braid's only ABI. It is plain C; every function returns a
 * braidResult_t and sets output parameters only on success. Signatures follow
 * NCCL's one for one (ncclAllReduce -> braidAllReduce), and every enum uses
 * NCCL's numeric values, so an NCCL-compatible layer is a cast.
 *
 * Thread-safety: calls on one communicator must come from one thread at a time,
 * except braidCommAbort, which may be called from any thread at any time.
 */
#ifndef BRAID_BRAID_H_
#define BRAID_BRAID_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In C++ the enums below are int-based, so any int a caller passes (a bad
 * datatype, say) is a value Braid can check rather than undefined behaviour.
 * The layout is the same as C's. */
#ifdef __cplusplus
#define BRAID_ENUM_BASE : int
#else
#define BRAID_ENUM_BASE
#endif

#define BRAID_MAJOR 0
#define BRAID_MINOR 1
#define BRAID_PATCH 0
#define BRAID_VERSION_CODE (BRAID_MAJOR * 10000 + BRAID_MINOR * 100 + BRAID_PATCH)

typedef enum BRAID_ENUM_BASE {
  braidSuccess = 0,
  braidUnhandledCudaError = 1,
  braidSystemError = 2,
  braidInternalError = 3,
  braidInvalidArgument = 4,
  braidInvalidUsage = 5,
  braidRemoteError = 6,
  braidInProgress = 7,
  braidTimeout = 8, /* Braid's own: a wait passed BRAID_TIMEOUT_MS */
  braidNumResults = 9
} braidResult_t;

typedef enum BRAID_ENUM_BASE {
  braidInt8 = 0,
  braidChar = 0,
  braidUint8 = 1,
  braidInt32 = 2,
  braidInt = 2,
  braidUint32 = 3,
  braidInt64 = 4,
  braidUint64 = 5,
  braidFloat16 = 6,
  braidHalf = 6,
  braidFloat32 = 7,
  braidFloat = 7,
  braidFloat64 = 8,
  braidDouble = 8,
  braidBfloat16 = 9,
  /* OCP float8 (NCCL 2.28's values): e4m3 is finite-only (max 448, NaN
   * 0x7f/0xff); e5m2 has Inf and NaN. Reductions compute in float32 and round
   * to nearest even, saturating to the largest finite value. */
  braidFloat8e4m3 = 10,
  braidFloat8e5m2 = 11,
  braidNumTypes = 12
} braidDataType_t;

typedef enum BRAID_ENUM_BASE {
  braidSum = 0,
  braidProd = 1,
  braidMax = 2,
  braidMin = 3,
  braidAvg = 4,
  braidNumOps = 5,
  /* Values from braidNumOps up are premul-sum operations a communicator made
   * (braidRedOpCreatePreMulSum); none is above this. */
  braidMaxRedOp = 0x7fffffff
} braidRedOp_t;

/* Where a premul-sum's scalar lives (NCCL's ncclScalarResidence_t values). */
typedef enum BRAID_ENUM_BASE {
  /* Read through the pointer by every call that uses the op, when the call
   * runs (in stream order): device memory, or host memory that stays valid. */
  braidScalarDevice = 0,
  /* Copied when the op is made. */
  braidScalarHostImmediate = 1
} braidScalarResidence_t;

typedef struct braidComm* braidComm_t;
#define BRAID_COMM_NULL NULL

/* A stream orders operations. NULL: the call has completed when it returns (with device
 * buffers: CUDA's legacy default stream, synchronized). A stream from braidStreamCreate:
 * a host stream. Any other value is taken as a cudaStream_t, as NCCL takes it: the call
 * is ordered on it and may return before it has run. */
typedef struct braidStream* braidStream_t;

#define BRAID_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[BRAID_UNIQUE_ID_BYTES];
} braidUniqueId;

#define BRAID_CONFIG_MAGIC 0xb4a1d001u
#define BRAID_CONFIG_UNDEF_INT INT_MIN
#define BRAID_CONFIG_UNDEF_PTR NULL

/* Communicator configuration. Starts with size, magic and version so that
 * fields can be appended in later versions without breaking old callers:
 * append new fields at the end, never reorder. Initialise with
 * BRAID_CONFIG_INITIALIZER; fields left at BRAID_CONFIG_UNDEF_* take the
 * environment's value or the default. */
typedef struct braidConfig_v1 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;        /* 1 (default): init returns when the communicator is ready */
  int timeoutMs;       /* every wait's deadline; default BRAID_TIMEOUT_MS */
  const char* netName; /* transports to allow, as BRAID_TRANSPORTS ("shm,socket") */
} braidConfig_t;

#define BRAID_CONFIG_INITIALIZER                                                  \
  {                                                                               \
    sizeof(braidConfig_t), BRAID_CONFIG_MAGIC, BRAID_VERSION_CODE,                \
        BRAID_CONFIG_UNDEF_INT, BRAID_CONFIG_UNDEF_INT, BRAID_CONFIG_UNDEF_PTR    \
  }

/* Version as BRAID_VERSION_CODE. */
braidResult_t braidGetVersion(int* version);

/* Text for a result code (never NULL). */
const char* braidGetErrorString(braidResult_t result);

/* The last error seen on this communicator, or on this thread when comm is
 * NULL, as text a user can act on. Never NULL; "" when there was none. */
const char* braidGetLastError(braidComm_t comm);

/* Creates a unique id: starts the rendezvous service in this process (which
 * must stay alive until every rank has joined) and draws a random secret that
 * every rank must present. */
braidResult_t braidGetUniqueId(braidUniqueId* uniqueId);

braidResult_t braidCommInitRank(braidComm_t* comm, int nranks, braidUniqueId commId, int rank);
braidResult_t braidCommInitRankConfig(braidComm_t* comm, int nranks, braidUniqueId commId,
                                      int rank, braidConfig_t* config);

/* Creates the world communicator from the launcher's environment: Braid's own
 * (BRAID_RANK, BRAID_WORLD_SIZE, BRAID_ROOT=host:port, BRAID_SECRET), torchrun's
 * (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: the root listens on MASTER_PORT + 1, since
 * torch's store holds MASTER_PORT), OpenMPI's
 * (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or Slurm's (SLURM_PROCID,
 * SLURM_NTASKS). Rank 0 serves the rendezvous at the root address. */
braidResult_t braidCommInitFromEnv(braidComm_t* comm, braidConfig_t* config);

/* Waits for this rank's outstanding operations, then says goodbye to peers. */
braidResult_t braidCommFinalize(braidComm_t comm);
/* Frees the communicator (finalizing first if needed). */
braidResult_t braidCommDestroy(braidComm_t comm);
/* Stops every operation on comm, from any thread, and frees it. Peers waiting
 * on this rank get an error naming it. */
braidResult_t braidCommAbort(braidComm_t comm);

braidResult_t braidCommCount(const braidComm_t comm, int* count);
braidResult_t braidCommUserRank(const braidComm_t comm, int* rank);

/* An error raised asynchronously (a peer died, an operation on a stream
 * failed): braidSuccess, or the error; its text is braidGetLastError(comm). */
braidResult_t braidCommGetAsyncError(braidComm_t comm, braidResult_t* asyncError);

/* Marks this moment on comm's BRAID_TRACE timeline as `name` (a training step's start,
 * a phase): an instant on this rank's row that braid-trace shows against the calls.
 * Does nothing when comm does not trace; name is copied (at most 255 bytes kept). */
braidResult_t braidTraceMarker(braidComm_t comm, const char* name);

/* A reduction for comm's all-reduce, reduce-scatter and reduce on `datatype`:
 * the sum over ranks of each rank's input times its own scalar (NCCL's
 * ncclRedOpCreatePreMulSum). The scalar is one element of `datatype`; each
 * rank passes its own. Integers wrap; float16, bfloat16 and float8 multiply
 * in float32 and round once. The op may be destroyed once the last call using
 * it has returned (inside a group too: the call keeps what it needs). */
braidResult_t braidRedOpCreatePreMulSum(braidRedOp_t* op, void* scalar, braidDataType_t datatype,
                                        braidScalarResidence_t residence, braidComm_t comm);
/* Destroys an op made by braidRedOpCreatePreMulSum on comm. */
braidResult_t braidRedOpDestroy(braidRedOp_t op, braidComm_t comm);

/* Host streams: an ordered queue of operations run by a worker thread. */
braidResult_t braidStreamCreate(braidStream_t* stream);
braidResult_t braidStreamSynchronize(braidStream_t stream);
braidResult_t braidStreamDestroy(braidStream_t stream);

/* Memory peers can map. braidMemAlloc returns host memory that other ranks on
 * the node can read and write directly, so collectives on it skip staging
 * copies (any memory works with every call; this is only faster). Free it with
 * braidMemFree. */
braidResult_t braidMemAlloc(void** ptr, size_t size);
/* Device memory peers can map (NCCL's ncclMemAlloc): size bytes on the calling thread's
 * current CUDA device (its current context, else the runtime's current device), made with
 * cuMem and shareable as a POSIX file descriptor, rounded up to the allocation granularity;
 * where the device offers no such handles, from cudaMalloc. braidUnhandledCudaError where
 * there is no device (the message says why). Free it with braidMemFree. */
braidResult_t braidMemAllocDevice(void** ptr, size_t size);
/* Frees either kind. Device memory: once the device's work has finished (it synchronises
 * the device, as cudaFree waits), so not while a stream captures a CUDA graph: a device
 * synchronisation invalidates the capture. */
braidResult_t braidMemFree(void* ptr);

/* Registers a user buffer with a communicator for the calls that use it
 * (NCCL's ncclCommRegister); *handle is passed to braidCommDeregister. */
braidResult_t braidCommRegister(const braidComm_t comm, void* buff, size_t size, void** handle);
braidResult_t braidCommDeregister(const braidComm_t comm, void* handle);

/* Collectives. Every rank passes the same count; a count of 0 is checked and returns at
 * once, touching nothing and waiting for no peer (all-to-all-v: its counts are its arrays).
 *
 * All-reduce: recvbuff[i] = op over ranks of sendbuff[i]. In place when
 * sendbuff == recvbuff. Every rank ends with bitwise-identical results. */
braidResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                             braidDataType_t datatype, braidRedOp_t op, braidComm_t comm,
                             braidStream_t stream);

/* All-gather: recvbuff (nranks * sendcount) holds every rank's sendbuff, in
 * rank order. In place when sendbuff == recvbuff + rank * sendcount. */
braidResult_t braidAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                             braidDataType_t datatype, braidComm_t comm, braidStream_t stream);

/* Reduce-scatter: sendbuff holds nranks * recvcount elements; rank r receives
 * block r of the reduction. In place when recvbuff == sendbuff + rank * recvcount. */
braidResult_t braidReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 braidDataType_t datatype, braidRedOp_t op, braidComm_t comm,
                                 braidStream_t stream);

/* Broadcast root's sendbuff into every rank's recvbuff (sendbuff is read on
 * root only). */
braidResult_t braidBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                             braidDataType_t datatype, int root, braidComm_t comm,
                             braidStream_t stream);

/* Reduce into root's recvbuff (recvbuff is written on root only). */
braidResult_t braidReduce(const void* sendbuff, void* recvbuff, size_t count,
                          braidDataType_t datatype, braidRedOp_t op, int root, braidComm_t comm,
                          braidStream_t stream);

/* Gather: root's recvbuff (nranks * count) gets every rank's sendbuff. In place
 * on root when sendbuff == recvbuff + root * count. */
braidResult_t braidGather(const void* sendbuff, void* recvbuff, size_t count,
                          braidDataType_t datatype, int root, braidComm_t comm,
                          braidStream_t stream);

/* Scatter: block r of root's sendbuff (nranks * count) goes to rank r. In
 * place on root when recvbuff == sendbuff + root * count. */
braidResult_t braidScatter(const void* sendbuff, void* recvbuff, size_t count,
                           braidDataType_t datatype, int root, braidComm_t comm,
                           braidStream_t stream);

/* All-to-all: block p (count elements) of sendbuff goes to rank p, and block p
 * of recvbuff comes from rank p. In place when sendbuff == recvbuff. */
braidResult_t braidAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                            braidDataType_t datatype, braidComm_t comm, braidStream_t stream);

/* All-to-all with per-peer counts and displacements (in elements; arrays of
 * nranks). sendcounts[p] on this rank must equal recvcounts[this rank] on p. */
braidResult_t braidAlltoAllv(const void* sendbuff, const size_t sendcounts[],
                             const size_t sdispls[], void* recvbuff, const size_t recvcounts[],
                             const size_t rdispls[], braidDataType_t datatype, braidComm_t comm,
                             braidStream_t stream);

/* Point to point. Matched in order per (sender, receiver) pair; counts must
 * agree. Inside a group, any pattern of sends and receives completes; a
 * group's receive buffers must not overlap its other buffers (invalid usage). */
braidResult_t braidSend(const void* sendbuff, size_t count, braidDataType_t datatype, int peer,
                        braidComm_t comm, braidStream_t stream);
braidResult_t braidRecv(void* recvbuff, size_t count, braidDataType_t datatype, int peer,
                        braidComm_t comm, braidStream_t stream);

/* Returns once every rank has entered the barrier. */
braidResult_t braidBarrier(braidComm_t comm, braidStream_t stream);

/* Groups: calls between braidGroupStart and braidGroupEnd on this thread are
 * issued together at braidGroupEnd. Groups nest; the outermost end issues. A
 * group may span communicators, ranks of one process included (one thread
 * driving several ranks, as with NCCL's ncclCommInitAll): their calls are
 * issued side by side, those sharing a stream in the order first used. */
braidResult_t braidGroupStart(void);
braidResult_t braidGroupEnd(void);

/* Collectives, for braidCommGetAlgorithm (Braid's own; NCCL has no such enum). */
typedef enum BRAID_ENUM_BASE {
  braidCollAllReduce = 0,
  braidCollAllGather = 1,
  braidCollReduceScatter = 2,
  braidCollBroadcast = 3,
  braidCollReduce = 4,
  braidCollGather = 5,
  braidCollScatter = 6,
  braidCollAlltoAll = 7,
  braidCollAlltoAllv = 8,
  braidNumCollectives = 9
} braidCollective_t;

/* Which algorithm a call of `collective` with `count` elements of `datatype`
 * (count as that collective's own count argument; for all-to-all-v, the
 * elements this rank sends to one peer) runs on comm, and the cost model's
 * predicted time in microseconds. *algorithm is a static string ("ring",
 * "tree", "halving_doubling", "bruck", "pairwise", "linear", "direct",
 * "two_shot", "hierarchical"), or a registered algorithm's name (valid while comm
 * lives). BRAID_ALGO applies as it does to the call.
 * Once comm's device calls run on its device windows (from its first device
 * collective on one node), the answer is a device call's: "direct" and
 * "two_shot" are the windows' one-shot and two-shot programs, the others
 * lowered schedules; *predictedUs is 0 where no GPU figures price it.
 * Either output may be NULL. Changes nothing. */
braidResult_t braidCommGetAlgorithm(braidComm_t comm, braidCollective_t collective, size_t count,
                                    braidDataType_t datatype, const char** algorithm,
                                    double* predictedUs);

/* Registers a user's algorithm on comm: a schedule file (docs/algorithms.md) given as a
 * path, or as the JSON text itself when pathOrJson starts with '{'. A file (or text) that
 * starts with '<' is read as MSCCL's XML (docs/algorithms.md, "MSCCL XML"). It is refused
 * (braidInvalidArgument, braidGetLastError naming the file, the rank count, the count, the
 * rank, the step and the fault) unless the simulator proves it for comm's rank count; then
 * it competes in comm's choice of algorithm for the calls it serves, and BRAID_ALGO may
 * name it ("allreduce:<name>"). A file of a name already registered replaces it.
 * Collective: every rank calls it with the same file, with no operation of comm in
 * flight (braidInvalidUsage where the ranks' files differ). BRAID_ALGO_FILES loads files
 * alike at init. */
braidResult_t braidCommRegisterAlgorithm(braidComm_t comm, const char* pathOrJson);

#define BRAID_SPLIT_NOCOLOR -1
/* Splits comm: ranks passing the same color form a new communicator, ordered
 * by key (then by rank in comm). color BRAID_SPLIT_NOCOLOR gives *newcomm ==
 * NULL. Every rank of comm must call it. */
braidResult_t braidCommSplit(braidComm_t comm, int color, int key, braidComm_t* newcomm,
                             braidConfig_t* config);

#define BRAID_SHRINK_DEFAULT 0x00 /* wait for comm's operations in flight to end */
#define BRAID_SHRINK_ABORT 0x01   /* abort them first (after a failure) */
/* A communicator of comm's ranks minus excludeRanksList (NCCL's ncclCommShrink),
 * ordered as in comm. Every surviving rank calls it with the same list; excluded
 * ranks (dead ones, typically) do not. It works after a rank died: it needs
 * neither the dead rank nor comm's data connections. comm stays to be destroyed
 * (or aborted) by the caller. A rank that finds itself in the list gets
 * braidInvalidUsage. */
braidResult_t braidCommShrink(braidComm_t comm, int* excludeRanksList, int excludeRanksCount,
                              braidComm_t* newcomm, braidConfig_t* config, int shrinkFlags);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BRAID_BRAID_H_ */
