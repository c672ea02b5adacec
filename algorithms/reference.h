// What a collective's result is, as rank arithmetic, apart from any algorithm: every
// rank's buffers as NCCL lays them out (in place included), and for each element of a
// rank's output the input elements it must equal: one rank's input element, or the
// reduction over every rank of their input elements at one index. The simulator's proof of
// schedule files (runtime/algorithm_proof.h) and the algorithms' tests
// (tests/unit/algorithms/coll_check.h) take their expected values from here, each with its
// own input values. All-to-all-v's layout depends on its counts: callers lay it out. Pure;
// thread-safe.
#pragma once

#include <cstdint>

#include "algorithms/schedule.h"

namespace braid::algo {

// Whether `c` reduces (all-reduce, reduce-scatter, reduce).
bool reduces(Collective c);

// One rank's buffers, in elements. In place, the input lies inside one buffer of
// storageElems at inPlaceOffset, and the output is its window [outputOffset,
// outputOffset + outputWindow) (outputWindow 0: the whole buffer), as SimRank
// (exec/simulator.h) takes them; a rank with no output of its own in place (a gather's
// non-root) is laid out as out of place.
struct RankLayout {
  uint64_t inputElems = 0, outputElems = 0;
  bool inPlace = false;
  uint64_t inPlaceOffset = 0, outputOffset = 0, outputWindow = 0;
  uint64_t storageElems = 0;
};

RankLayout rankLayout(Collective c, int nranks, int rank, uint64_t count, int root, bool inPlace);

// Where rank `rank`'s output element j comes from.
struct OutputSource {
  enum class Kind : uint8_t {
    kUndefined,  // nothing is defined there (a reduce's non-root)
    kCopy,       // rank `from`'s input element `index`
    kReduce,     // op over every rank, in rank order, of its input element `index`
  };
  Kind kind = Kind::kUndefined;
  int from = 0;
  uint64_t index = 0;
};

// Not for all-to-all-v (kUndefined).
OutputSource outputSource(Collective c, int rank, uint64_t count, int root, uint64_t j);

}  // namespace braid::algo
