#include "runtime/nvtx.h"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>

#include "core/env.h"
#include "core/logging.h"

namespace braid {
namespace {

// NVTX's C ABI (nvToolsExt.h, version 3 attributes): the facts, declared here so nothing
// needs NVTX's headers.
struct NvtxAttributes {
  uint16_t version;  // 3
  uint16_t size;     // sizeof this struct
  uint32_t category;
  int32_t colorType;  // 1: ARGB
  uint32_t color;
  int32_t payloadType;
  int32_t reserved0;
  uint64_t payload;
  int32_t messageType;  // 1: ASCII
  const char* message;
};
using DomainCreate = void* (*)(const char*);
using DomainPush = int (*)(void*, const NvtxAttributes*);
using DomainPop = int (*)(void*);

struct Nvtx {
  DomainPush push = nullptr;
  DomainPop pop = nullptr;
  void* domain = nullptr;
  bool host = false;
};

const Nvtx& nvtx() {
  static Nvtx n = [] {
    Nvtx out;
    void* lib = dlopen("libnvToolsExt.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return out;
    auto create = reinterpret_cast<DomainCreate>(dlsym(lib, "nvtxDomainCreateA"));
    out.push = reinterpret_cast<DomainPush>(dlsym(lib, "nvtxDomainRangePushEx"));
    out.pop = reinterpret_cast<DomainPop>(dlsym(lib, "nvtxDomainRangePop"));
    if (create == nullptr || out.push == nullptr || out.pop == nullptr) {
      BRAID_INFO("NVTX: libnvToolsExt.so.1 lacks the domain range calls; no ranges");
      return Nvtx{};
    }
    out.domain = create("NCCL");
    out.host = envInt("BRAID_NVTX", 0) != 0;
    BRAID_INFO("NVTX: ranges on device calls%s", out.host ? " and host calls" : "");
    return out;
  }();
  return n;
}

}  // namespace

const char* ncclRangeName(const Call& op) {
  if (op.kind == Call::Kind::kSend) return "ncclSend";
  if (op.kind == Call::Kind::kRecv) return "ncclRecv";
  switch (op.collective) {
    case algo::Collective::kAllReduce:
      return "ncclAllReduce";
    case algo::Collective::kBroadcast:
      return "ncclBroadcast";
    case algo::Collective::kReduce:
      return "ncclReduce";
    case algo::Collective::kAllGather:
      return "ncclAllGather";
    case algo::Collective::kReduceScatter:
      return "ncclReduceScatter";
    case algo::Collective::kAllToAll:
    case algo::Collective::kAllToAllv:
      return "ncclAlltoAll";
    case algo::Collective::kGather:
      return "ncclGather";
    case algo::Collective::kScatter:
      return "ncclScatter";
  }
  return "ncclCollective";
}

bool nvtxHostRanges() { return nvtx().host; }

NvtxRange::NvtxRange(const Call& op) {
  const Nvtx& n = nvtx();
  if (n.push == nullptr) return;
  NvtxAttributes a{};
  a.version = 3;
  a.size = sizeof(NvtxAttributes);
  a.colorType = 1;
  a.color = 0xff76b900;
  a.messageType = 1;
  a.message = ncclRangeName(op);
  n.push(n.domain, &a);
  pushed_ = true;
}

NvtxRange::~NvtxRange() {
  if (pushed_) nvtx().pop(nvtx().domain);
}

}  // namespace braid
