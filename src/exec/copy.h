// copyBytes: memcpy for the executors' plain copies (a slot into a destination, a block into
// place), except where glibc's memcpy is at its slowest.
//
// glibc copies from a few KiB up to its non-temporal threshold (about 1 MiB here) with
// `rep movsb`. On AMD EPYC (Zen) that runs at 3 GB/s instead of 50 when the destination
// lies 1-31 bytes past the source modulo 4 KiB, and at half speed up to 63 bytes past
// (braid-micro: copyAliasing): each store's low 12 address bits then match a load still
// in flight, and the core replays the load. Buffers from malloc (16 bytes past a page)
// against page-aligned FIFO slots or windows land there. copyBytes moves such copies
// 64 bytes at a time with 16-byte loads and stores, which run at full speed at any
// distance, and leaves every other copy to memcpy.
#pragma once

#include <cstddef>

namespace braid {

// As memcpy (dst and src do not overlap). Out of line: the reduction kernels' builds for
// two instruction sets both call it (reduce_kernels.inc).
void copyBytes(void* dst, const void* src, size_t bytes);

// Whether copyBytes moves these bytes itself rather than through memcpy.
bool copyAvoidsMemcpy(const void* dst, const void* src, size_t bytes);

}  // namespace braid
