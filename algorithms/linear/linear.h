// Linear (star) algorithms: the root exchanges with every other rank directly,
// all exchanges in one batch. For gather and scatter, whose data must all pass
// through the root anyway.
#pragma once

#include "algorithms/schedule.h"

namespace braid::algo {

Schedule linearGather(const CollArgs& args);
Schedule linearScatter(const CollArgs& args);

}  // namespace braid::algo
