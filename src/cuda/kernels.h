// Device kernels for copying and reducing, launched from host code.
//
// Plain C++: a CUDA stream travels as void* (a cudaStream_t; nullptr is the legacy
// default stream), so no CUDA type reaches the callers. Launches are asynchronous on that
// stream; a returned error is a launch error (a fault inside a kernel shows at the next
// synchronisation). Pointers must be device-accessible (device, managed, pinned or
// peer-mapped memory) and aligned to the element size. In a build without CUDA every
// launcher returns braidUnhandledCudaError saying so. Thread-safe, as CUDA launches are.
#pragma once

#include <cstddef>
#include <cstdint>

#include "braid/braid.h"
#include "core/status.h"

namespace braid::cuda {

constexpr int kMaxReduceInputs = 8;

// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrcs-1][i], for 1 <= nsrcs <= 8,
// accumulated in order in float32 for float16, bfloat16 and float8 (rounded once, to
// nearest even, float8 saturating), in the type itself otherwise; integers wrap. For avg
// the result is divided by `divisor` (integers truncate), as the host's reduceFinal does;
// for other ops the divisor is ignored. max/min keep a NaN from either side. dst may be
// one of the srcs exactly, not overlap one partially. 16-byte vector loads and stores run
// where every pointer has the same offset modulo 16 (else element by element).
Status launchReduce(void* dst, const void* const* srcs, int nsrcs, size_t count,
                    braidDataType_t datatype, braidRedOp_t op, int divisor, void* stream);

// dst[i] = src[i] * scalar, a premul-sum's scaling (braidRedOpCreatePreMulSum), computed as
// the host's ReduceKernels::scale does (integers wrap; float16, bfloat16 and float8 in
// float32, rounded once). The scalar is one element of `datatype`: read on the device,
// when the kernel runs, through scalarDevice (device-accessible memory), or taken from
// scalarValue's bytes at the launch; exactly one of the two is given. dst may be src.
Status launchScale(void* dst, const void* src, size_t count, braidDataType_t datatype,
                   const void* scalarDevice, const void* scalarValue, void* stream);

// dst[0..bytes) = src[0..bytes), in 16-byte vectors where both share an offset modulo 16.
// The buffers must not overlap.
Status launchCopy(void* dst, const void* src, size_t bytes, void* stream);

// *word += 1, by one thread, once the work before it on the stream has finished: a count
// that advances at every replay of a CUDA graph that captured it (stream writes replay
// their captured values). One stream at a time may bump a word.
Status launchBump(void* word, void* stream);

// A one-thread kernel that returns once *word (device-accessible, 8-byte aligned), loaded
// with acquire at system scope, reaches `value` as a wrapping counter: what
// streamWaitValue64 waits for, as a kernel. A stream memory wait blocks the hardware queue
// it sits at the head of, and streams of one context share those queues
// (CUDA_DEVICE_MAX_CONNECTIONS): a kernel that spins does not hold back the work of another
// stream behind it (BRAID_CUDA_WAITS=kernel).
Status launchWait(const void* word, uint64_t value, void* stream);

// Loads every kernel above into the current device's context now, once per process and
// device (thread-safe; later calls return at once). CUDA's lazy loading (the default
// since CUDA 12.2) loads a kernel at its first launch instead, and loading may wait for
// every stream of the context: with ranks that are threads of one process, a rank's first
// reduction would wait for a peer's stream, which waits at a barrier for that very rank.
// Braid calls it before a communicator's first device call enqueues anything.
Status loadKernels();

}  // namespace braid::cuda
