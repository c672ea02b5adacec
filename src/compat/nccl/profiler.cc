#include "compat/nccl/profiler.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace braid::nccl {
namespace {

// NCCL's profiler ABI (its plugin/profiler headers), declared here from its published
// layouts: the event type bits, and the descriptors of the events Braid reports.
enum : uint64_t {
  kProfileGroup = 1 << 0,
  kProfileColl = 1 << 1,
  kProfileP2p = 1 << 2,
  kProfileGroupApi = 1 << 8,
  kProfileCollApi = 1 << 9,
  kProfileP2pApi = 1 << 10,
};

// Larger than any version's union, so a plugin that copies the whole descriptor reads ours.
constexpr size_t kUnionBytes = 160;

struct CollDescr {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;  // v5+
};
struct P2pDescr {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;  // v5+
};

// v5 and v6: the members Braid fills are laid out alike in both.
struct DescrV5 {
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
    CollDescr coll;
    P2pDescr p2p;
    unsigned char pad[kUnionBytes];
  };
};
struct DescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollDescr coll;  // parentGroup is not v4's: it lies past what a v4 plugin reads
    P2pDescr p2p;
    unsigned char pad[kUnionBytes];
  };
};

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                        ...);
using InitV5 = ncclResult_t (*)(void** context, uint64_t commId, int* mask, const char* commName,
                                int nNodes, int nranks, int rank, Logger log);
using InitV4 = ncclResult_t (*)(void** context, int* mask, const char* commName, uint64_t commHash,
                                int nNodes, int nranks, int rank, Logger log);
// The table a plugin exports (ncclProfiler_vN): name, init, startEvent, stopEvent,
// recordEventState, finalize. init's arguments differ between v4 and v5.
struct PluginTable {
  const char* name;
  void* init;
  ncclResult_t (*startEvent)(void* context, void** handle, void* descr);
  ncclResult_t (*stopEvent)(void* handle);
  void* recordEventState;
  ncclResult_t (*finalize)(void* context);
};

struct Plugin {
  const PluginTable* table = nullptr;
  int version = 0;
};

// NCCL's logger for plugins: warnings to stderr, the rest dropped.
void pluginLog(int level, unsigned long, const char* file, int line, const char* fmt, ...) {
  if (level > 2) return;  // NCCL_LOG_WARN is 2
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "NCCL profiler plugin (%s:%d): ", file, line);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

const Plugin& plugin() {
  static const Plugin p = [] {
    Plugin out;
    const char* name = std::getenv("NCCL_PROFILER_PLUGIN");
    if (name == nullptr || *name == '\0' || std::strcmp(name, "none") == 0) return out;
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr && std::strchr(name, '/') == nullptr) {
      const std::string alt = std::string("libnccl-profiler-") + name + ".so";
      lib = dlopen(alt.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (lib == nullptr) {
      std::fprintf(stderr, "NCCL drop-in: NCCL_PROFILER_PLUGIN=%s does not load: %s\n", name,
                   dlerror());
      return out;
    }
    for (int v : {6, 5, 4}) {
      const std::string symbol = "ncclProfiler_v" + std::to_string(v);
      if (void* t = dlsym(lib, symbol.c_str()); t != nullptr) {
        out.table = static_cast<const PluginTable*>(t);
        out.version = v;
        return out;
      }
    }
    std::fprintf(stderr, "NCCL drop-in: %s exports no ncclProfiler_v6, _v5 or _v4\n", name);
    return out;
  }();
  return p;
}

const char* funcName(Kind k) {
  switch (k) {
    case Kind::kAllReduce:
      return "AllReduce";
    case Kind::kAllGather:
      return "AllGather";
    case Kind::kReduceScatter:
      return "ReduceScatter";
    case Kind::kBroadcast:
      return "Broadcast";
    case Kind::kReduce:
      return "Reduce";
    case Kind::kGather:
      return "Gather";
    case Kind::kScatter:
      return "Scatter";
    case Kind::kAlltoAll:
      return "AlltoAll";
    case Kind::kSend:
      return "Send";
    case Kind::kRecv:
      return "Recv";
  }
  return "";
}

const char* typeName(braidDataType_t t) {
  switch (t) {
    case braidInt8:
      return "ncclInt8";
    case braidUint8:
      return "ncclUint8";
    case braidInt32:
      return "ncclInt32";
    case braidUint32:
      return "ncclUint32";
    case braidInt64:
      return "ncclInt64";
    case braidUint64:
      return "ncclUint64";
    case braidFloat16:
      return "ncclFloat16";
    case braidFloat32:
      return "ncclFloat32";
    case braidFloat64:
      return "ncclFloat64";
    case braidBfloat16:
      return "ncclBfloat16";
    case braidFloat8e4m3:
      return "ncclFloat8e4m3";
    default:
      return "ncclFloat8e5m2";
  }
}

bool isP2p(Kind k) { return k == Kind::kSend || k == Kind::kRecv; }

// comm's plugin context, made at its first call (nullptr: no plugin, or its init failed).
void* contextOf(ncclComm* comm, braidComm_t inner) {
  const Plugin& p = plugin();
  if (p.table == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(comm->mu);
  if (comm->profilerTried) return comm->profilerContext;
  comm->profilerTried = true;
  int rank = 0, nranks = 1;
  (void)braidCommUserRank(inner, &rank);
  (void)braidCommCount(inner, &nranks);
  const uint64_t id = reinterpret_cast<uintptr_t>(comm);
  void* context = nullptr;
  ncclResult_t r;
  if (p.version >= 5) {
    r = reinterpret_cast<InitV5>(p.table->init)(&context, id, &comm->profilerMask, "", 1, nranks,
                                                rank, pluginLog);
  } else {
    r = reinterpret_cast<InitV4>(p.table->init)(&context, &comm->profilerMask, "", id, 1, nranks,
                                                rank, pluginLog);
  }
  if (r != ncclSuccess) {
    std::fprintf(stderr, "NCCL drop-in: the profiler plugin's init failed (%d)\n", r);
    return nullptr;
  }
  comm->profilerContext = context;
  comm->profilerRank = rank;
  return context;
}

void* start(void* context, DescrV5* d) {
  const Plugin& p = plugin();
  void* handle = nullptr;
  if (p.version >= 5) {
    (void)p.table->startEvent(context, &handle, d);
    return handle;
  }
  DescrV4 v4{};
  v4.type = static_cast<uint8_t>(d->type);
  v4.parentObj = d->parentObj;
  v4.rank = d->rank;
  std::memcpy(v4.pad, d->pad, kUnionBytes);
  (void)p.table->startEvent(context, &handle, &v4);
  return handle;
}

}  // namespace

ProfiledCalls::ProfiledCalls(ncclComm* comm, braidComm_t inner, const Call* calls, size_t n,
                             bool group) {
  void* context = contextOf(comm, inner);
  if (context == nullptr) return;
  plugin_ = context;
  const int mask = comm->profilerMask;
  const bool v5 = plugin().version >= 5;
  n_ = n < kMaxEvents ? n : kMaxEvents;
  if (v5 && (mask & kProfileGroupApi)) {
    DescrV5 d{};
    d.type = kProfileGroupApi;
    d.rank = comm->profilerRank;
    d.groupApi.groupDepth = group ? 1 : 0;
    api_ = start(context, &d);
  }
  for (size_t i = 0; v5 && i < n_; ++i) {
    const Call& c = calls[i];
    const uint64_t type = isP2p(c.kind) ? kProfileP2pApi : kProfileCollApi;
    if (!(mask & type)) continue;
    DescrV5 d{};
    d.type = type;
    d.parentObj = api_;
    d.rank = comm->profilerRank;
    if (isP2p(c.kind)) {
      d.p2pApi = {funcName(c.kind), c.count, typeName(c.datatype), c.stream, false};
    } else {
      d.collApi = {funcName(c.kind), c.count, typeName(c.datatype), c.root, c.stream, false};
    }
    callApis_[i] = start(context, &d);
  }
  if (mask & kProfileGroup) {
    DescrV5 d{};
    d.type = kProfileGroup;
    d.rank = comm->profilerRank;
    group_ = start(context, &d);
  }
  for (size_t i = 0; i < n_; ++i) {
    const Call& c = calls[i];
    const uint64_t type = isP2p(c.kind) ? kProfileP2p : kProfileColl;
    if (!(mask & type)) continue;
    DescrV5 d{};
    d.type = type;
    d.parentObj = group_;
    d.rank = comm->profilerRank;
    if (isP2p(c.kind)) {
      void* buff = c.kind == Kind::kSend ? const_cast<void*>(c.send) : c.recv;
      d.p2p = {funcName(c.kind), buff, typeName(c.datatype), c.count, c.root, 1, group_};
    } else {
      const uint64_t seq = comm->profilerSeq[static_cast<size_t>(c.kind)]++;
      d.coll = {seq, funcName(c.kind), c.send,  c.recv, c.count, c.root, typeName(c.datatype), 1,
                0,   "braid",          "braid", group_};
    }
    calls_[i] = start(context, &d);
  }
}

void ProfiledCalls::stop(void*& handle) {
  if (handle != nullptr) (void)plugin().table->stopEvent(handle);
  handle = nullptr;
}

ProfiledCalls::~ProfiledCalls() {
  if (plugin_ == nullptr) return;
  for (size_t i = 0; i < n_; ++i) stop(calls_[i]);
  stop(group_);
  for (size_t i = 0; i < n_; ++i) stop(callApis_[i]);
  stop(api_);
}

void finalizeProfiler(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->mu);
  if (comm->profilerContext == nullptr) return;
  (void)plugin().table->finalize(comm->profilerContext);
  comm->profilerContext = nullptr;
}

}  // namespace braid::nccl
