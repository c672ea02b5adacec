// The reduction kernel template, included by each datatype family's .cu file, which
// instantiates it once per (datatype, op) of its family.
//
// An element kind E says how a datatype is stored (Storage) and computed (Acc), and widens
// and narrows between them. Ops follow the host kernels (src/exec/reduce_kernels.inc)
// exactly: integers wrap (computed unsigned), max/min keep a NaN from either side, avg sums
// and divides once at the end, so a device result equals the host's bit for bit wherever
// both reduce the same operands in the same order.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/load_kernel.cuh"
#include "cuda/reduce_family.h"

namespace braid::cuda::detail {

// Types computed as stored: integers, float32, float64.
template <typename T>
struct Plain {
  using Storage = T;
  using Acc = T;
  __device__ static T widen(T x) { return x; }
  __device__ static T narrow(T x) { return x; }
};

template <typename A>
__device__ inline A wrapAdd(A x, A y) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<decltype(x + y)>;
    return static_cast<A>(static_cast<U>(x) + static_cast<U>(y));
  } else {
    return x + y;
  }
}

template <typename A>
__device__ inline A wrapMul(A x, A y) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<decltype(x * y)>;
    return static_cast<A>(static_cast<U>(x) * static_cast<U>(y));
  } else {
    return x * y;
  }
}

// avg's division: truncating for integers (of the wrapped sum), rounded for floats.
template <typename A>
__device__ inline A divideBy(A v, int divisor) {
  if constexpr (std::is_floating_point_v<A>) {
    return v / static_cast<A>(divisor);
  } else if constexpr (std::is_signed_v<A>) {
    return static_cast<A>(static_cast<int64_t>(v) / divisor);
  } else {
    return static_cast<A>(static_cast<uint64_t>(v) / static_cast<uint64_t>(divisor));
  }
}

struct OpSum {
  static constexpr bool kDivides = false;
  template <typename A>
  __device__ static A apply(A x, A y) {
    return wrapAdd(x, y);
  }
};
struct OpProd {
  static constexpr bool kDivides = false;
  template <typename A>
  __device__ static A apply(A x, A y) {
    return wrapMul(x, y);
  }
};
struct OpMax {
  static constexpr bool kDivides = false;
  template <typename A>
  __device__ static A apply(A x, A y) {
    return (x > y || x != x) ? x : y;
  }
};
struct OpMin {
  static constexpr bool kDivides = false;
  template <typename A>
  __device__ static A apply(A x, A y) {
    return (x < y || x != x) ? x : y;
  }
};
struct OpAvg {  // reduces as sum; divides once at the end
  static constexpr bool kDivides = true;
  template <typename A>
  __device__ static A apply(A x, A y) {
    return wrapAdd(x, y);
  }
};

// 16 bytes of elements of type S, as one load or store; pairs[i] holds e[2i] in its low
// byte where S is one byte.
template <typename S>
union Vector {
  static constexpr int kLanes = 16 / sizeof(S);
  uint4 u;
  S e[kLanes];
  uint16_t pairs[8];
};

// An element kind may convert two one-byte elements at once (widenPair, narrowPair: one
// instruction for two on sm_89 and later, where float8 reductions are bound by the
// conversions); the vector path then converts in pairs, with the same results.
template <typename E, typename = void>
struct HasPairs : std::false_type {};
template <typename E>
struct HasPairs<E, std::void_t<decltype(E::widenPair(uint16_t{}))>> : std::true_type {};

template <typename E>
__device__ inline void widenVector(const Vector<typename E::Storage>& v, typename E::Acc* out) {
  constexpr int kLanes = Vector<typename E::Storage>::kLanes;
  if constexpr (HasPairs<E>::value) {
#pragma unroll
    for (int i = 0; i < kLanes / 2; ++i) {
      const float2 f = E::widenPair(v.pairs[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kLanes; ++i) out[i] = E::widen(v.e[i]);
  }
}

template <typename E>
__device__ inline void narrowVector(const typename E::Acc* in, Vector<typename E::Storage>* v) {
  constexpr int kLanes = Vector<typename E::Storage>::kLanes;
  if constexpr (HasPairs<E>::value) {
#pragma unroll
    for (int i = 0; i < kLanes / 2; ++i) v->pairs[i] = E::narrowPair(in[2 * i], in[2 * i + 1]);
  } else {
#pragma unroll
    for (int i = 0; i < kLanes; ++i) v->e[i] = E::narrow(in[i]);
  }
}

template <typename E, typename Op>
__device__ inline typename E::Storage combineAt(const ReduceParams& p, size_t i) {
  using S = typename E::Storage;
  typename E::Acc acc = E::widen(static_cast<const S*>(p.srcs[0])[i]);
#pragma unroll
  for (int k = 1; k < kMaxInputs; ++k) {
    if (k < p.nsrcs) acc = Op::apply(acc, E::widen(static_cast<const S*>(p.srcs[k])[i]));
  }
  if (Op::kDivides && p.divisor != 1) acc = divideBy(acc, p.divisor);
  return E::narrow(acc);
}

// Grid-stride over 16-byte vectors (every source's vector loaded before any is combined,
// so a thread has up to kMaxInputs loads in flight), then the unaligned head and the tail
// element by element.
template <typename E, typename Op>
__global__ void __launch_bounds__(kThreads) reduceKernel(ReduceParams p) {
  using S = typename E::Storage;
  using A = typename E::Acc;
  constexpr int kLanes = Vector<S>::kLanes;
  using Vec = Vector<S>;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool divides = Op::kDivides && p.divisor != 1;
  for (size_t v = tid; v < p.nvec; v += stride) {
    const size_t at = p.head + v * kLanes;
    Vec in[kMaxInputs];
#pragma unroll
    for (int k = 0; k < kMaxInputs; ++k) {
      if (k < p.nsrcs)
        in[k].u = *reinterpret_cast<const uint4*>(static_cast<const S*>(p.srcs[k]) + at);
    }
    A acc[kLanes];
    widenVector<E>(in[0], acc);
#pragma unroll
    for (int k = 1; k < kMaxInputs; ++k) {
      if (k < p.nsrcs) {
        A more[kLanes];
        widenVector<E>(in[k], more);
#pragma unroll
        for (int i = 0; i < kLanes; ++i) acc[i] = Op::apply(acc[i], more[i]);
      }
    }
    if (divides) {
#pragma unroll
      for (int i = 0; i < kLanes; ++i) acc[i] = divideBy(acc[i], p.divisor);
    }
    Vec out;
    narrowVector<E>(acc, &out);
    *reinterpret_cast<uint4*>(static_cast<S*>(p.dst) + at) = out.u;
  }
  const size_t tailStart = p.head + p.nvec * kLanes;
  const size_t scalars = p.head + (p.count - tailStart);
  for (size_t j = tid; j < scalars; j += stride) {
    const size_t i = j < p.head ? j : tailStart + (j - p.head);
    static_cast<S*>(p.dst)[i] = combineAt<E, Op>(p, i);
  }
}

template <typename E, typename Op>
int launchReduceKernel(const ReduceParams& p, unsigned blocks, cudaStream_t s) {
  if (blocks == 0) return loadOnly(reduceKernel<E, Op>);
  return launchKernel(reduceKernel<E, Op>, blocks, kThreads, s, p);
}

// Launches the kernel of element kind E for `op` (blocks 0: loads it only); returns the
// launch's cudaError_t.
template <typename E>
int launchOps(const ReduceParams& p, braidRedOp_t op, unsigned blocks, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (op) {
    case braidSum:
      return launchReduceKernel<E, OpSum>(p, blocks, s);
    case braidProd:
      return launchReduceKernel<E, OpProd>(p, blocks, s);
    case braidMax:
      return launchReduceKernel<E, OpMax>(p, blocks, s);
    case braidMin:
      return launchReduceKernel<E, OpMin>(p, blocks, s);
    case braidAvg:
      return launchReduceKernel<E, OpAvg>(p, blocks, s);
    default:
      return -1;
  }
}

// A premul-sum's scaling: each element times the scalar, as the type's product (integers
// wrap; narrow types in float32, where the product is exact, rounded once), as the host's
// ReduceKernels::scale computes it.
template <typename E>
__global__ void __launch_bounds__(kThreads) scaleKernel(ScaleParams p) {
  using S = typename E::Storage;
  using A = typename E::Acc;
  constexpr int kLanes = Vector<S>::kLanes;
  using Vec = Vector<S>;
  S raw;
  memcpy(&raw, p.scalarPtr != nullptr ? p.scalarPtr : static_cast<const void*>(p.value),
         sizeof(S));
  const A s = E::widen(raw);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (size_t v = tid; v < p.nvec; v += stride) {
    const size_t at = p.head + v * kLanes;
    Vec in, out;
    in.u = *reinterpret_cast<const uint4*>(static_cast<const S*>(p.src) + at);
    A x[kLanes];
    widenVector<E>(in, x);
#pragma unroll
    for (int i = 0; i < kLanes; ++i) x[i] = wrapMul(x[i], s);
    narrowVector<E>(x, &out);
    *reinterpret_cast<uint4*>(static_cast<S*>(p.dst) + at) = out.u;
  }
  const size_t tailStart = p.head + p.nvec * kLanes;
  const size_t scalars = p.head + (p.count - tailStart);
  for (size_t j = tid; j < scalars; j += stride) {
    const size_t i = j < p.head ? j : tailStart + (j - p.head);
    static_cast<S*>(p.dst)[i] = E::narrow(wrapMul(E::widen(static_cast<const S*>(p.src)[i]), s));
  }
}

template <typename E>
int launchScaleAs(const ScaleParams& p, unsigned blocks, void* stream) {
  if (blocks == 0) return loadOnly(scaleKernel<E>);
  return launchKernel(scaleKernel<E>, blocks, kThreads, static_cast<cudaStream_t>(stream), p);
}

}  // namespace braid::cuda::detail
