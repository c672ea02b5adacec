// The collectives the integration tests sweep, in one order, with their names (as the
// perf tools spell them).
#pragma once

namespace braid::test {

enum Coll {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kAllToAll,
  kAllToAllv,
  kNumColls
};
inline const char* const kCollNames[] = {"allreduce", "allgather", "reducescatter",
                                         "broadcast", "reduce",    "gather",
                                         "scatter",   "alltoall",  "alltoallv"};

}  // namespace braid::test
