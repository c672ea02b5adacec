// Ring algorithms: pure rank arithmetic, no transports.
//
// All-reduce is reduce-scatter followed by all-gather around the ring
// rank -> rank+1. The buffer is processed in rounds of nranks chunks of at most
// maxStepElems each, so the first send of every round fits in one FIFO.
// Each final value is computed by exactly one rank and copied to the others,
// so every rank ends with bitwise-identical results.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

Schedule ringAllReduce(const CollArgs& args);

}  // namespace braid::algo
