// Schedules as JSON (algorithms/schedule_json.h): the exact text of a small schedule, one
// step per line; all-to-all-v's counts and a multi-node schedule's nodeOf appear; every
// registry schedule gives one line per step.
#include "algorithms/schedule_json.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "algorithms/registry.h"

namespace braid::algo {
namespace {

TEST(ScheduleJson, ASmallScheduleReadsAsItsSteps) {
  Schedule s;
  s.rank = 1;
  s.nranks = 2;
  s.scratchElems = 3;
  s.steps.push_back({OpKind::kRecvReduceSend, BufRef::kInput, BufRef::kNone, 0, 0, 4, 0, 4});
  s.steps.back().batchWithNext = true;
  s.steps.push_back({OpKind::kCopy, BufRef::kScratch, BufRef::kOutput, -1, -1, 0, 8, 2, true});
  CollArgs a;
  a.collective = Collective::kAllReduce;
  a.rank = 1;
  a.nranks = 2;
  a.count = 8;
  a.elemSize = 4;
  a.maxStepElems = 16;
  EXPECT_EQ(scheduleJson(s, a, "ring", "cuda"),
            "{\"collective\": \"allreduce\", \"algorithm\": \"ring\", \"executor\": \"cuda\", "
            "\"rank\": 1, \"nranks\": 2, \"count\": 8, \"elemSize\": 4, \"inPlace\": false, "
            "\"root\": 0, \"maxStepElems\": 16, \"scratchElems\": 3, \"steps\": [\n"
            "{\"op\": \"recvReduceSend\", \"src\": \"input\", \"srcOffset\": 4, \"dst\": \"none\", "
            "\"dstOffset\": 0, \"count\": 4, \"sendPeer\": 0, \"recvPeer\": 0, \"final\": false, "
            "\"batchWithNext\": true},\n"
            "{\"op\": \"copy\", \"src\": \"scratch\", \"srcOffset\": 0, \"dst\": \"output\", "
            "\"dstOffset\": 8, \"count\": 2, \"sendPeer\": -1, \"recvPeer\": -1, \"final\": true, "
            "\"batchWithNext\": false}\n"
            "]}\n");
}

TEST(ScheduleJson, AllToAllvCountsAndNodesAppear) {
  CollArgs a;
  a.collective = Collective::kAllToAllv;
  a.nranks = 2;
  a.elemSize = 1;
  a.sendCounts = {1, 2};
  a.sendDispls = {0, 1};
  a.recvCounts = {3, 4};
  a.recvDispls = {0, 3};
  a.nodeOf = {0, 1};
  const std::string json =
      scheduleJson(buildSchedule(Algorithm::kPairwise, a), a, "pairwise", "host");
  for (const char* part :
       {"\"sendCounts\": [1, 2]", "\"sendDispls\": [0, 1]", "\"recvCounts\": [3, 4]",
        "\"recvDispls\": [0, 3]", "\"nodeOf\": [0, 1]"}) {
    EXPECT_NE(json.find(part), std::string::npos) << part << " in " << json;
  }
}

TEST(ScheduleJson, EveryRegistryScheduleHasALinePerStep) {
  for (int i = 0; i < kNumAlgorithms; ++i) {
    const Algorithm alg = static_cast<Algorithm>(i);
    CollArgs a;
    a.collective = supports(alg, Collective::kAllReduce)  ? Collective::kAllReduce
                   : supports(alg, Collective::kAllToAll) ? Collective::kAllToAll
                                                          : Collective::kGather;
    a.rank = 2;
    a.nranks = 5;
    a.count = 1000;
    a.elemSize = 4;
    a.maxStepElems = 64;
    const Schedule s = buildSchedule(alg, a);
    const std::string json = scheduleJson(s, a, algorithmName(alg), "host");
    EXPECT_EQ(static_cast<size_t>(std::count(json.begin(), json.end(), '\n')), s.steps.size() + 2)
        << algorithmName(alg);
    EXPECT_EQ(json.substr(json.size() - 4), "\n]}\n");
  }
}

TEST(ScheduleJson, WindowStepsShowTheirFlagsAndLending) {
  CollArgs a;
  a.rank = 1;
  a.nranks = 3;
  a.count = 1000;
  a.elemSize = 4;
  a.windowElems = 4096;
  const Schedule s = buildWindowSchedule(Algorithm::kTwoShot, a);
  const std::string json = scheduleJson(s, a, "two_shot", "host");
  EXPECT_EQ(static_cast<size_t>(std::count(json.begin(), json.end(), '\n')), s.steps.size() + 2);
  for (const char* part :
       {"\"windowed\": true", "\"windowElems\": 4096", "\"lendsInput\": true",
        "\"lendsOutput\": true", "{\"op\": \"beginRound\"", "\"writes\": true",
        "\"flag\": \"done\"", "\"bufOffset\": 336, \"ownFromBuffer\": true"}) {
    EXPECT_NE(json.find(part), std::string::npos) << part << " in " << json;
  }
  // FIFO schedules keep their fields as they were.
  const std::string fifo = scheduleJson(buildSchedule(Algorithm::kRing, a), a, "ring", "host");
  EXPECT_EQ(fifo.find("windowed"), std::string::npos);
  EXPECT_EQ(fifo.find("bufOffset"), std::string::npos);
}

}  // namespace
}  // namespace braid::algo
