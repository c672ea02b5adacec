// Recursive halving-doubling (Rabenseifner): reduce-scatter by recursive
// halving, all-gather by recursive doubling; log2(n) steps each. A rank count
// that is not a power of two first folds the extra ranks into partners and
// unfolds them at the end. Pure rank arithmetic.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

Schedule halvingDoublingAllReduce(const CollArgs& args);
Schedule halvingDoublingReduceScatter(const CollArgs& args);
Schedule halvingDoublingAllGather(const CollArgs& args);

}  // namespace braid::algo
