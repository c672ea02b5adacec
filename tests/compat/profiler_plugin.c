/* A profiler plugin for NCCL's profiler ABI (version 5), as a profiler written for NCCL
 * would be: it exports ncclProfiler_v5 and writes every event it is given, one line each, to
 * $BRAID_TEST_PROFILER_OUT.rank<R>. nccl_dropin_test loads it into the drop-in through
 * NCCL_PROFILER_PLUGIN and checks the lines. The declarations are NCCL's published layouts
 * (its plugin/profiler headers), written out here. */
#include <nccl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  kGroup = 1 << 0,
  kColl = 1 << 1,
  kP2p = 1 << 2,
  kGroupApi = 1 << 8,
  kCollApi = 1 << 9,
  kP2pApi = 1 << 10,
};

typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
  };
} Descr;

typedef void (*Logger)(int, unsigned long, const char*, int, const char*, ...);

typedef struct {
  FILE* out;
  int rank;
  long next;
} Context;

typedef struct {
  Context* ctx;
  long id;
} Event;

static ncclResult_t init(void** context, uint64_t commId, int* mask, const char* name,
                         int nNodes, int nranks, int rank, Logger log) {
  (void)commId, (void)name, (void)nNodes, (void)log;
  const char* base = getenv("BRAID_TEST_PROFILER_OUT");
  if (base == NULL) return ncclInvalidUsage;
  char path[4096];
  snprintf(path, sizeof(path), "%s.rank%d", base, rank);
  Context* c = calloc(1, sizeof(Context));
  c->out = fopen(path, "w");
  if (c->out == NULL) return ncclSystemError;
  c->rank = rank;
  fprintf(c->out, "init nranks=%d rank=%d\n", nranks, rank);
  *mask = kGroup | kColl | kP2p | kGroupApi | kCollApi | kP2pApi;
  *context = c;
  return ncclSuccess;
}

static long idOf(void* handle) { return handle ? ((Event*)handle)->id : 0; }

static ncclResult_t startEvent(void* context, void** handle, void* descr) {
  Context* c = context;
  Descr* d = descr;
  Event* e = calloc(1, sizeof(Event));
  e->ctx = c;
  e->id = ++c->next;
  *handle = e;
  fprintf(c->out, "start %ld parent=%ld rank=%d ", e->id, idOf(d->parentObj), d->rank);
  switch (d->type) {
    case kGroup: fprintf(c->out, "group\n"); break;
    case kGroupApi: fprintf(c->out, "groupapi depth=%d\n", d->groupApi.groupDepth); break;
    case kCollApi:
      fprintf(c->out, "collapi %s count=%zu %s root=%d\n", d->collApi.func, d->collApi.count,
              d->collApi.datatype, d->collApi.root);
      break;
    case kP2pApi:
      fprintf(c->out, "p2papi %s count=%zu %s\n", d->p2pApi.func, d->p2pApi.count,
              d->p2pApi.datatype);
      break;
    case kColl:
      fprintf(c->out, "coll %s count=%zu %s seq=%llu root=%d group=%ld send=%d recv=%d\n",
              d->coll.func, d->coll.count, d->coll.datatype,
              (unsigned long long)d->coll.seqNumber, d->coll.root, idOf(d->coll.parentGroup),
              d->coll.sendBuff != NULL, d->coll.recvBuff != NULL);
      break;
    case kP2p:
      fprintf(c->out, "p2p %s count=%zu %s peer=%d group=%ld\n", d->p2p.func, d->p2p.count,
              d->p2p.datatype, d->p2p.peer, idOf(d->p2p.parentGroup));
      break;
    default: fprintf(c->out, "type %llu\n", (unsigned long long)d->type);
  }
  return ncclSuccess;
}

static ncclResult_t stopEvent(void* handle) {
  Event* e = handle;
  fprintf(e->ctx->out, "stop %ld\n", e->id);
  free(e);
  return ncclSuccess;
}

static ncclResult_t recordEventState(void* handle, int state, void* args) {
  (void)handle, (void)state, (void)args;
  return ncclSuccess;
}

static ncclResult_t finalize(void* context) {
  Context* c = context;
  fprintf(c->out, "finalize\n");
  fclose(c->out);
  free(c);
  return ncclSuccess;
}

typedef struct {
  const char* name;
  void* init;
  void* startEvent;
  void* stopEvent;
  void* recordEventState;
  void* finalize;
} Table;

__attribute__((visibility("default"))) const Table ncclProfiler_v5 = {
    "braid-test", (void*)init, (void*)startEvent, (void*)stopEvent, (void*)recordEventState,
    (void*)finalize};
