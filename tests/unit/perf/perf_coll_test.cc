// Unit tests of the perf tools' per-collective parts: nccl-tests' size
// conventions (block alignment, size and count columns, in-place placement)
// for every collective, the bus-bandwidth arithmetic they feed, and -A.
// Expected numbers are worked out by hand from nccl-tests' rules, not from the
// functions under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "perf/coll/perf_args.h"
#include "perf/coll/perf_sizes.h"
#include "perf/coll/perf_util.h"

namespace braid::perf {
namespace {

TEST(PerfSizes, BlockIsCountOverRanksRoundedDownTo16Bytes) {
  EXPECT_EQ(blockCount(8, 4, 4), 0u);              // 2 floats / 4 ranks
  EXPECT_EQ(blockCount(64, 4, 4), 4u);             // 16 floats / 4 = 4 (16 bytes)
  EXPECT_EQ(blockCount(96, 4, 4), 4u);             // 6 floats: 24 bytes -> 16
  EXPECT_EQ(blockCount(1 << 20, 4, 4), 65536u);    // 1 MiB of floats over 4
  EXPECT_EQ(blockCount(100, 4, 3), 8u);            // 25 / 3 = 8 floats = 32 bytes
  EXPECT_EQ(blockCount(64, 1, 4), 16u);            // int8: multiples of 16
  EXPECT_EQ(blockCount(64, 1, 8), 0u);             // 8 bytes per rank -> 0
  EXPECT_EQ(blockCount(1000, 2, 3), 160u);         // half: 500 / 3 = 166 -> 160
  EXPECT_EQ(blockCount(1024, 8, 3), 42u);          // double: 128 / 3 = 42 (even)
  EXPECT_EQ(blockCount(1032, 8, 3), 42u);          // 129 / 3 = 43 -> 42
  EXPECT_EQ(blockCount(1 << 20, 4, 1), 262144u);   // one rank: the whole row
  EXPECT_EQ(blockCount(5u << 20, 4, 5), 262144u);  // 5 MiB over 5 ranks
  EXPECT_EQ(blockCount(0, 4, 4), 0u);
}

TEST(PerfSizes, WholeBufferCollectives) {
  // all-reduce, broadcast, reduce, sendrecv: count = bytes / size, S = the row.
  PerfSizes s = wholeBufferSizes(1 << 20, 4, 2, 4);
  EXPECT_EQ(s.sendCount, 262144u);
  EXPECT_EQ(s.recvCount, 262144u);
  EXPECT_EQ(s.paramCount, 262144u);
  EXPECT_EQ(s.rowCount, 262144u);
  EXPECT_EQ(s.rowBytes, 1u << 20);
  EXPECT_EQ(s.sendInplaceOffset, 0u);  // in place: sendbuff == recvbuff
  EXPECT_EQ(s.recvInplaceOffset, 0u);
  EXPECT_EQ(wholeBufferSizes(8, 4, 0, 4).rowCount, 2u);  // nothing rounded per rank
  EXPECT_EQ(wholeBufferSizes(8, 8, 0, 4).rowBytes, 8u);
}

TEST(PerfSizes, AllGatherAndGather) {
  // 1 MiB of floats on 4 ranks: blocks of 65536; rank 2's in-place send block
  // is block 2 of recvbuff.
  for (auto sizes : {allGatherSizes, gatherSizes}) {
    PerfSizes s = sizes(1 << 20, 4, 2, 4);
    EXPECT_EQ(s.paramCount, 65536u);
    EXPECT_EQ(s.sendCount, 65536u);
    EXPECT_EQ(s.recvCount, 262144u);
    EXPECT_EQ(s.rowCount, 65536u);  // nccl-tests' count column: the call's count
    EXPECT_EQ(s.rowBytes, 1u << 20);
    EXPECT_EQ(s.sendInplaceOffset, 2u * 65536u);
    EXPECT_EQ(s.recvInplaceOffset, 0u);
  }
  // 100 bytes on 3 ranks: blocks of 8 floats, so the row shrinks to 96 bytes.
  PerfSizes s = allGatherSizes(100, 4, 1, 3);
  EXPECT_EQ(s.paramCount, 8u);
  EXPECT_EQ(s.recvCount, 24u);
  EXPECT_EQ(s.rowBytes, 96u);
  EXPECT_EQ(s.sendInplaceOffset, 8u);
}

TEST(PerfSizes, ReduceScatterAndScatter) {
  for (auto sizes : {reduceScatterSizes, scatterSizes}) {
    PerfSizes s = sizes(1 << 20, 4, 3, 4);
    EXPECT_EQ(s.paramCount, 65536u);
    EXPECT_EQ(s.sendCount, 262144u);
    EXPECT_EQ(s.recvCount, 65536u);
    EXPECT_EQ(s.rowCount, 65536u);
    EXPECT_EQ(s.rowBytes, 1u << 20);
    EXPECT_EQ(s.sendInplaceOffset, 0u);
    EXPECT_EQ(s.recvInplaceOffset, 3u * 65536u);  // recvbuff = sendbuff + rank*count
  }
}

TEST(PerfSizes, AllToAll) {
  PerfSizes s = allToAllSizes(1 << 20, 4, 1, 4);
  EXPECT_EQ(s.paramCount, 65536u);  // per peer
  EXPECT_EQ(s.sendCount, 262144u);
  EXPECT_EQ(s.recvCount, 262144u);
  EXPECT_EQ(s.rowCount, 65536u);
  EXPECT_EQ(s.rowBytes, 1u << 20);
  EXPECT_EQ(s.sendInplaceOffset, 0u);  // in place: sendbuff == recvbuff
  EXPECT_EQ(s.recvInplaceOffset, 0u);
}

// nccl-tests' alltoallv: count / nranks per peer, no 16-byte rounding; S = the
// whole send array, busbw = algbw x (n-1)/n.
TEST(PerfSizes, AllToAllv) {
  PerfSizes s = allToAllvSizes(1000, 4, 1, 3);  // 250 floats over 3 ranks: 83 each
  EXPECT_EQ(s.paramCount, 83u);
  EXPECT_EQ(s.rowCount, 83u);
  EXPECT_EQ(s.sendCount, 249u);
  EXPECT_EQ(s.recvCount, 249u);
  EXPECT_EQ(s.rowBytes, 996u);
  EXPECT_EQ(allToAllvSizes(1 << 20, 4, 0, 4).paramCount, 65536u);
}

// nccl-tests' hypercube: a block of count / nranks rounded down to 4 elements;
// algbw counts what each rank receives, block x (n-1), and busbw = algbw.
TEST(PerfSizes, Hypercube) {
  PerfSizes s = hypercubeSizes(1000, 4, 3, 4);  // 250 floats / 4 = 62 -> 60
  EXPECT_EQ(s.paramCount, 60u);
  EXPECT_EQ(s.sendCount, 60u);
  EXPECT_EQ(s.recvCount, 240u);
  EXPECT_EQ(s.rowCount, 60u);
  EXPECT_EQ(s.rowBytes, 960u);
  EXPECT_EQ(s.sendInplaceOffset, 180u);  // rank 3's block of recvbuff
  EXPECT_EQ(s.recvInplaceOffset, 0u);
  EXPECT_EQ(hypercubeSizes(16, 1, 0, 8).paramCount, 0u);  // 2 bytes per rank -> 0
  EXPECT_DOUBLE_EQ(unitBusBwFactor(8), 1.0);
}

using SizesFn = PerfSizes (*)(size_t, size_t, int, int);

// Properties every collective's sizes must have, over many rows.
TEST(PerfSizes, SizeColumnIsTheLargerBufferAndInPlaceFits) {
  const SizesFn kAll[] = {wholeBufferSizes, allGatherSizes, reduceScatterSizes,
                          gatherSizes,      scatterSizes,   allToAllSizes};
  for (SizesFn fn : kAll) {
    for (int nranks : {1, 2, 3, 4, 5, 7, 8, 16, 17}) {
      for (size_t es : {1, 2, 4, 8}) {
        for (size_t bytes : {size_t{0}, size_t{8}, size_t{100}, size_t{4096}, size_t{1000003}}) {
          size_t rowBytesIn = bytes / es * es;
          for (int rank = 0; rank < nranks; ++rank) {
            PerfSizes s = fn(rowBytesIn, es, rank, nranks);
            // nccl-tests' size column: max(sendBytes, recvBytes).
            EXPECT_EQ(s.rowBytes, std::max(s.sendCount, s.recvCount) * es);
            EXPECT_LE(s.rowBytes, rowBytesIn);
            // 16-byte aligned blocks (whole-buffer ones have no blocks).
            if (fn != wholeBufferSizes && es < 16) {
              EXPECT_EQ(s.paramCount * es % 16, 0u);
            }
            // In place, the smaller buffer lies inside the larger one.
            size_t big = std::max(s.sendCount, s.recvCount);
            EXPECT_LE(s.sendInplaceOffset + s.sendCount, big);
            EXPECT_LE(s.recvInplaceOffset + s.recvCount, big);
          }
        }
      }
    }
  }
}

TEST(PerfBandwidth, GatheringBusBandwidth) {
  // all-gather of 1 MiB (the gathered array) on 4 ranks in 1 ms: each rank
  // receives 3/4 of it.
  PerfSizes s = allGatherSizes(1 << 20, 4, 0, 4);
  double algbw = algBandwidth(s.rowBytes, 1e-3);
  EXPECT_DOUBLE_EQ(algbw, 1.048576);
  EXPECT_DOUBLE_EQ(algbw * gatherBusBwFactor(4), 0.786432);
  EXPECT_DOUBLE_EQ(gatherBusBwFactor(2), 0.5);
  EXPECT_DOUBLE_EQ(gatherBusBwFactor(5), 0.8);
  // broadcast, reduce, sendrecv: busbw == algbw.
  PerfSizes w = wholeBufferSizes(1 << 20, 4, 0, 4);
  EXPECT_DOUBLE_EQ(algBandwidth(w.rowBytes, 1e-3) * unitBusBwFactor(4), 1.048576);
  EXPECT_DOUBLE_EQ(allReduceBusBwFactor(5), 1.6);
}

// ------------------------------------------------------------------ -A

bool parseWords(std::vector<std::string> words, PerfArgs* args, std::string* error) {
  words.insert(words.begin(), "broadcast_perf");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return parsePerfArgs(static_cast<int>(words.size()), argv.data(), args, error);
}

TEST(PerfAlgo, FlagAndSpec) {
  PerfArgs a;
  std::string error;
  ASSERT_TRUE(parseWords({}, &a, &error)) << error;
  EXPECT_EQ(a.algo, "");
  ASSERT_TRUE(parseWords({"-A", "tree"}, &a, &error)) << error;
  EXPECT_EQ(a.algo, "tree");
  PerfArgs b;
  ASSERT_TRUE(parseWords({"--algo", "halving_doubling", "-b", "8"}, &b, &error)) << error;
  EXPECT_EQ(b.algo, "halving_doubling");
  EXPECT_EQ(b.minBytes, 8u);
  PerfArgs c;
  EXPECT_FALSE(parseWords({"-A", ""}, &c, &error));
  EXPECT_FALSE(parseWords({"-A"}, &c, &error));

  EXPECT_EQ(algoSpec("allreduce", "tree"), "allreduce:tree");
  EXPECT_EQ(algoSpec("alltoall", "pairwise"), "alltoall:pairwise");
  EXPECT_EQ(algoLabel("tree", nullptr), "tree");
  EXPECT_EQ(algoLabel("tree", "allreduce:ring"), "tree");  // -A wins
  EXPECT_EQ(algoLabel("", nullptr), "default");
  EXPECT_EQ(algoLabel("", ""), "default");
  EXPECT_EQ(algoLabel("", "^tree"), "BRAID_ALGO=^tree");
}

}  // namespace
}  // namespace braid::perf
