// Datatype and op names, and the run-time choice between the two kernel builds.
#include "exec/reduce.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <cstring>

#include "core/logging.h"
#include "exec/reduce_tables.h"

namespace braid {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool cpuHasF16c() {
#if defined(__clang__)
  // clang's __builtin_cpu_supports does not know "f16c" (clang 14); ask CPUID.1:ECX.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
#else
  return __builtin_cpu_supports("f16c");
#endif
}
#endif

using TableFn = const ReduceKernels* (*)(braidDataType_t, braidRedOp_t);

struct IsaChoice {
  const char* name;
  TableFn table;
};

// BRAID_REDUCE_ISA=generic forces the portable build (to compare results or speed);
// otherwise the AVX2 build runs wherever the CPU has it.
IsaChoice chooseIsa() {
  const IsaChoice generic{"generic", &reduceTableGeneric};
  const char* forced = std::getenv("BRAID_REDUCE_ISA");
  bool forceGeneric = forced != nullptr && std::strcmp(forced, "generic") == 0;
  if (forced != nullptr && *forced != '\0' && !forceGeneric && std::strcmp(forced, "avx2") != 0) {
    BRAID_WARN("BRAID_REDUCE_ISA=%s is not one of generic, avx2; ignored", forced);
  }
  if (forceGeneric) return generic;
  if (cpuSupportsReduceAvx2()) return {"avx2", &reduceTableAvx2};
  if (forced != nullptr && std::strcmp(forced, "avx2") == 0) {
    BRAID_WARN("BRAID_REDUCE_ISA=avx2 but this CPU lacks AVX2, F16C or FMA; using generic");
  }
  return generic;
}

const IsaChoice& isaChoice() {
  static const IsaChoice choice = [] {
    IsaChoice c = chooseIsa();
    BRAID_INFO("reduction kernels: %s", c.name);
    return c;
  }();
  return choice;
}

}  // namespace

bool cpuSupportsReduceAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  // The avx2 check includes the OS saving YMM state (XCR0), not only CPUID.
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuHasF16c();
#else
  return false;
#endif
}

const ReduceKernels& reduceKernels(braidDataType_t datatype, braidRedOp_t op) {
  const ReduceKernels* kernels = isaChoice().table(datatype, op);
  if (kernels == nullptr) {
    // A caller skipped validation: a bug in Braid, not a user error.
    BRAID_WARN("reduceKernels: invalid datatype %d or op %d", static_cast<int>(datatype),
               static_cast<int>(op));
    std::abort();
  }
  return *kernels;
}

const char* reduceIsa() { return isaChoice().name; }

size_t datatypeSize(braidDataType_t datatype) {
  switch (datatype) {
    case braidInt8:
    case braidUint8:
    case braidFloat8e4m3:
    case braidFloat8e5m2:
      return 1;
    case braidFloat16:
    case braidBfloat16:
      return 2;
    case braidInt32:
    case braidUint32:
    case braidFloat32:
      return 4;
    case braidInt64:
    case braidUint64:
    case braidFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* datatypeName(braidDataType_t datatype) {
  switch (datatype) {
    case braidInt8:
      return "int8";
    case braidUint8:
      return "uint8";
    case braidInt32:
      return "int32";
    case braidUint32:
      return "uint32";
    case braidInt64:
      return "int64";
    case braidUint64:
      return "uint64";
    case braidFloat16:
      return "float16";
    case braidFloat32:
      return "float32";
    case braidFloat64:
      return "float64";
    case braidBfloat16:
      return "bfloat16";
    case braidFloat8e4m3:
      return "float8e4m3";
    case braidFloat8e5m2:
      return "float8e5m2";
    default:
      return "invalid";
  }
}

const char* redOpName(braidRedOp_t op) {
  switch (op) {
    case braidSum:
      return "sum";
    case braidProd:
      return "prod";
    case braidMax:
      return "max";
    case braidMin:
      return "min";
    case braidAvg:
      return "avg";
    default:
      return "invalid";
  }
}

}  // namespace braid
