// nccl-tests' buffer-size conventions, one function per collective: from a
// row's size in bytes to each buffer's element count, the call's count, where
// the buffers sit in place, and the table's size and count columns.
// Header-only so unit tests need no communicator. Pure; thread-safe.
//
// The conventions (nccl-tests' *GetCollByteCount and *GetBw):
//  - all-reduce, broadcast, reduce, sendrecv: each rank's buffer is the whole
//    row, count = bytes / elemSize, and S (algbw = S / t) = count x elemSize.
//  - all-gather, reduce-scatter, all-to-all, gather, scatter: the row is the
//    whole gathered array. The per-rank block is bytes / elemSize / nranks
//    elements rounded down to a multiple of 16 bytes, so S = block x nranks x
//    elemSize can fall below the requested size, to 0 for tiny sizes.
//  - The size column is the larger of the send and receive buffers (= S); the
//    count column is the call's count argument (the block for the gathering
//    ones, as nccl-tests prints it).
//  - In place, the buffer a rank's own block is in sits at rank x block (for
//    gather and scatter this is root x block on the root, as the API wants; on
//    the other ranks the unused buffer's offset does not matter).
#pragma once

#include <cstddef>

#include "perf/coll/perf_common.h"

namespace braid::perf {

// Elements per rank of a gathering collective's row of `bytes` (nccl-tests:
// (count / nranks) rounded down to 16 bytes).
inline size_t blockCount(size_t bytes, size_t elemSize, int nranks) {
  if (elemSize == 0 || nranks <= 0) return 0;
  size_t perRank = bytes / elemSize / static_cast<size_t>(nranks);
  size_t align = elemSize < 16 ? 16 / elemSize : 1;
  return perRank / align * align;
}

// all-reduce, broadcast, reduce, sendrecv: in place sendbuff == recvbuff.
inline PerfSizes wholeBufferSizes(size_t bytes, size_t elemSize, int /*rank*/, int /*nranks*/) {
  PerfSizes s;
  size_t count = elemSize > 0 ? bytes / elemSize : 0;
  s.sendCount = s.recvCount = s.paramCount = s.rowCount = count;
  s.rowBytes = count * elemSize;
  return s;
}

// Shared by the gathering collectives: the call's count is the block.
inline PerfSizes blockSizes(size_t bytes, size_t elemSize, int nranks) {
  PerfSizes s;
  size_t block = blockCount(bytes, elemSize, nranks);
  s.paramCount = s.rowCount = block;
  s.rowBytes = block * static_cast<size_t>(nranks) * elemSize;
  return s;
}

// All-gather (and gather): send one block, receive all; in place the send
// block is the rank's own block of the receive buffer.
inline PerfSizes allGatherSizes(size_t bytes, size_t elemSize, int rank, int nranks) {
  PerfSizes s = blockSizes(bytes, elemSize, nranks);
  s.sendCount = s.paramCount;
  s.recvCount = s.paramCount * static_cast<size_t>(nranks);
  s.sendInplaceOffset = s.paramCount * static_cast<size_t>(rank);
  return s;
}

// Reduce-scatter (and scatter): send all blocks, receive one; in place the
// receive block is the rank's own block of the send buffer.
inline PerfSizes reduceScatterSizes(size_t bytes, size_t elemSize, int rank, int nranks) {
  PerfSizes s = blockSizes(bytes, elemSize, nranks);
  s.sendCount = s.paramCount * static_cast<size_t>(nranks);
  s.recvCount = s.paramCount;
  s.recvInplaceOffset = s.paramCount * static_cast<size_t>(rank);
  return s;
}

// Gather: all-gather's buffers (recvbuff matters on the root only).
inline PerfSizes gatherSizes(size_t bytes, size_t elemSize, int rank, int nranks) {
  return allGatherSizes(bytes, elemSize, rank, nranks);
}

// Scatter: reduce-scatter's buffers (sendbuff matters on the root only).
inline PerfSizes scatterSizes(size_t bytes, size_t elemSize, int rank, int nranks) {
  return reduceScatterSizes(bytes, elemSize, rank, nranks);
}

// All-to-all: nranks blocks each way; in place sendbuff == recvbuff.
inline PerfSizes allToAllSizes(size_t bytes, size_t elemSize, int /*rank*/, int nranks) {
  PerfSizes s = blockSizes(bytes, elemSize, nranks);
  s.sendCount = s.recvCount = s.paramCount * static_cast<size_t>(nranks);
  return s;
}

// All-to-all-v (nccl-tests' alltoallv): count / nranks elements to and from
// every peer (no 16-byte rounding); not in place.
inline PerfSizes allToAllvSizes(size_t bytes, size_t elemSize, int /*rank*/, int nranks) {
  PerfSizes s;
  if (elemSize == 0 || nranks <= 0) return s;
  const size_t perPeer = bytes / elemSize / static_cast<size_t>(nranks);
  s.paramCount = s.rowCount = perPeer;
  s.sendCount = s.recvCount = perPeer * static_cast<size_t>(nranks);
  s.rowBytes = s.sendCount * elemSize;
  return s;
}

// Hypercube all-gather (nccl-tests' hypercube): each rank's block is
// count / nranks elements rounded down to a multiple of 4; it receives every
// block. In place the block sits at rank x block of the receive buffer.
inline PerfSizes hypercubeSizes(size_t bytes, size_t elemSize, int rank, int nranks) {
  PerfSizes s;
  if (elemSize == 0 || nranks <= 0) return s;
  const size_t block = bytes / elemSize / (4 * static_cast<size_t>(nranks)) * 4;
  s.paramCount = s.rowCount = s.sendCount = block;
  s.recvCount = block * static_cast<size_t>(nranks);
  s.sendInplaceOffset = block * static_cast<size_t>(rank);
  s.rowBytes = s.recvCount * elemSize;
  return s;
}

}  // namespace braid::perf
