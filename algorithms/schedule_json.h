// A Schedule as JSON (BRAID_SCHEDULE_DUMP), for reading and diffing: one object per
// schedule, its header on the first line and one step per line after it, so two dumps
// (two ranks, two runs, two algorithms) diff step by step. A file of them is a stream of
// JSON values (jq reads it as is; Python with json.JSONDecoder.raw_decode).
//
//   {"collective": "allreduce", "algorithm": "ring", "executor": "host", "rank": 0,
//    "nranks": 2, "count": 8, "elemSize": 4, "inPlace": false, "root": 0,
//    "maxStepElems": 65536, "scratchElems": 0, "steps": [
//    {"op": "send", "src": "input", "srcOffset": 4, "dst": "none", "dstOffset": 0,
//     "count": 4, "sendPeer": 1, "recvPeer": -1, "final": false, "batchWithNext": false},
//    ...
//   ]}
//
// (Each step is one line; wrapped here.) All-to-all-v adds its sendCounts, sendDispls,
// recvCounts and recvDispls; a schedule across nodes its nodeOf; a window schedule
// "windowed": true with windowElems, scaledPut, lendsInput and lendsOutput, and its steps
// their window fields (flag, writes, bufOffset, ownFromBuffer) where the op has them.
// Offsets and counts are in elements. Pure; thread-safe.
#pragma once

#include <string>

#include "algorithms/schedule.h"

namespace braid::algo {

// `algorithm` and `executor` ("host", "cuda") are written as given.
std::string scheduleJson(const Schedule& schedule, const CollArgs& args, const char* algorithm,
                         const char* executor);

}  // namespace braid::algo
