// The Braid C API as the extension sees it: a table of braid.h's functions, resolved at
// load time from the libbraid.so that the braid package's ctypes layer (braid._lib) already
// loaded. One library instance serves both, so BRAID_LIBRARY (the emulated GPU's library,
// say) applies to the native backend too, and the extension has no link-time dependency
// on a libbraid path.
//
// Only braid.h is used: the types come from it and every pointer is decltype(&braidX).
// Thread-safety: load() runs once, at import, under the GIL; the table is read-only after.
#pragma once

#include <string>

#include "braid/braid.h"

namespace braid::torch_ext {

#define BRAID_API_FUNCTIONS(X)                                                           \
  X(braidGetErrorString) X(braidGetLastError) X(braidGetUniqueId) X(braidCommInitRankConfig) \
  X(braidCommDestroy) X(braidCommAbort) X(braidCommSplit) X(braidCommUserRank)           \
  X(braidCommCount) X(braidRedOpCreatePreMulSum) X(braidRedOpDestroy) X(braidAllReduce)  \
  X(braidAllGather) X(braidReduceScatter) X(braidBroadcast) X(braidReduce) X(braidGather) \
  X(braidScatter) X(braidAlltoAll) X(braidAlltoAllv) X(braidSend) X(braidRecv)           \
  X(braidBarrier) X(braidGroupStart) X(braidGroupEnd) X(braidGetVersion)

struct Api {
#define BRAID_API_MEMBER(name) decltype(&::name) name = nullptr;
  BRAID_API_FUNCTIONS(BRAID_API_MEMBER)
#undef BRAID_API_MEMBER
};

// The table; load() must have succeeded first.
const Api& api();

// Resolves every function from the library at `path` (already loaded by ctypes; loaded
// here otherwise). Throws std::runtime_error naming the path and the missing symbol.
void load(const std::string& path);

// The text of a failed call: braidGetLastError(comm) (this thread's when comm is null),
// else the result code's name.
std::string lastError(braidComm_t comm, braidResult_t result);

}  // namespace braid::torch_ext
