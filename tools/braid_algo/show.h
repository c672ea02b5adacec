// braid-algo show: a program drawn as SVG, one lane per rank, time running right; a
// message is an arrow from the sending step to the receiving one, a local step a box;
// each is labelled with its chunks. Columns come from a walk like the cost model's with
// every step taking one unit, so the picture shows the program's critical path.
#pragma once

#include <string>

#include "algorithms/file/schedule_file.h"

namespace braid::tools {

std::string programSvg(const algo::AlgoFile& file, const algo::FileProgram& program);

}  // namespace braid::tools
