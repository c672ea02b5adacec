// Schedule files (algorithms/file/schedule_file.h): every built-in schedule written as a
// file reads back to the same steps, the chunk-to-element mapping and the passes are as
// docs/algorithms.md states them, and malformed files are refused naming what is wrong.
#include "algorithms/file/schedule_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/direct/direct.h"
#include "algorithms/registry.h"
#include "tests/common/file_programs.h"

namespace braid::algo {
namespace {

bool sameStep(const Step& a, const Step& b) {
  return a.op == b.op && a.src == b.src && a.dst == b.dst && a.sendPeer == b.sendPeer &&
         a.recvPeer == b.recvPeer && a.srcOffset == b.srcOffset && a.dstOffset == b.dstOffset &&
         a.count == b.count && a.final == b.final && a.batchWithNext == b.batchWithNext &&
         a.flag == b.flag && a.writes == b.writes && a.ownFromBuffer == b.ownFromBuffer &&
         a.bufOffset == b.bufOffset;
}

// Writes every rank's schedule as a file, reads it back, instantiates it at the same
// arguments; "" when every rank's steps are the same.
std::string roundTrip(const std::vector<Schedule>& ranks, const CollArgs& args) {
  const std::string text = writeAlgoFile(fileFromSchedules(ranks, args, "builtin"));
  Expected<AlgoFile> f = parseAlgoFile(text);
  if (!f.isOk()) return "read back: " + f.status().message();
  const FileProgram* p = f.value().programFor(args.nranks);
  if (p == nullptr) return "no program";
  for (size_t r = 0; r < ranks.size(); ++r) {
    CollArgs a = args;
    a.rank = static_cast<int>(r);
    Expected<Schedule> s = instantiate(f.value(), *p, a);
    if (!s.isOk()) return "instantiate: " + s.status().message();
    const Schedule& want = ranks[r];
    if (s.value().steps.size() != want.steps.size()) {
      return "rank " + std::to_string(r) + ": " + std::to_string(s.value().steps.size()) +
             " steps, want " + std::to_string(want.steps.size());
    }
    for (size_t i = 0; i < want.steps.size(); ++i) {
      if (!sameStep(s.value().steps[i], want.steps[i])) {
        return "rank " + std::to_string(r) + " step " + std::to_string(i) + " differs";
      }
    }
    if (s.value().scratchElems < want.scratchElems) return "scratch differs";
    if (s.value().windowed != want.windowed) return "windowed differs";
    if (s.value().lendsInput != want.lendsInput || s.value().lendsOutput != want.lendsOutput) {
      return "rank " + std::to_string(r) + ": lending differs";
    }
  }
  return "";
}

TEST(ScheduleFile, EveryBuiltInRoundTripsWithIdenticalSteps) {
  int checked = 0;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    const auto alg = static_cast<Algorithm>(a);
    for (int c = 0; c <= static_cast<int>(Collective::kAllToAll); ++c) {
      const auto coll = static_cast<Collective>(c);
      if (!supports(alg, coll)) continue;
      for (int n : {2, 3, 4, 5, 8}) {
        for (uint64_t count : {0, 1, 7, 100}) {
          for (bool inPlace : {false, true}) {
            for (uint64_t maxStep : {uint64_t{1} << 16, uint64_t{16}}) {
              CollArgs args;
              args.collective = coll;
              args.nranks = n;
              args.count = count;
              args.elemSize = 4;
              args.inPlace = inPlace;
              args.root = n > 2 ? 1 : 0;
              args.maxStepElems = maxStep;
              if (alg == Algorithm::kHierarchical) {
                for (int r = 0; r < n; ++r) args.nodeOf.push_back(r / 2);
              }
              std::vector<Schedule> ranks;
              for (int r = 0; r < n; ++r) {
                args.rank = r;
                ranks.push_back(buildSchedule(alg, args));
              }
              args.rank = 0;
              const std::string err = roundTrip(ranks, args);
              ASSERT_EQ(err, "") << algorithmName(alg) << " " << collectiveName(coll) << " n=" << n
                                 << " count=" << count << (inPlace ? " in place" : "")
                                 << " maxStep=" << maxStep;
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(ScheduleFile, WindowSchedulesRoundTripWithIdenticalSteps) {
  int checked = 0;
  for (int c = 0; c <= static_cast<int>(Collective::kAllToAll); ++c) {
    const auto coll = static_cast<Collective>(c);
    for (int a = 0; a < kNumAlgorithms; ++a) {
      const auto alg = static_cast<Algorithm>(a);
      if (!supportsWindows(alg, coll)) continue;
      for (int n : {2, 3, 4}) {
        for (uint64_t count : {1, 37}) {
          CollArgs args;
          args.collective = coll;
          args.nranks = n;
          args.count = count;
          args.elemSize = 4;
          args.windowElems = 1024;
          if (!windowFits(args)) continue;
          std::vector<Schedule> ranks;
          for (int r = 0; r < n; ++r) {
            args.rank = r;
            ranks.push_back(buildWindowSchedule(alg, args));
          }
          args.rank = 0;
          ASSERT_EQ(roundTrip(ranks, args), "")
              << algorithmName(alg) << " " << collectiveName(coll);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10);
}

// Chunk j of a block of c elements starts at floor(j * c / chunksPerBlock).
TEST(ScheduleFile, ChunksMapToElementsAsTheFormatStates) {
  AlgoFile f = test::allReduceFile("map", test::gridAllReduce(1, 3));
  CollArgs args;
  args.nranks = 3;
  args.count = 10;
  args.elemSize = 4;
  Expected<Schedule> s = instantiate(f, f.programs[0], args);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  // Rank 0 sends chunk 0 (elements [0, 3)), then reduces chunk 2 (elements [6, 10)).
  const std::vector<Step>& st = s.value().steps;
  ASSERT_GE(st.size(), 3u);
  EXPECT_EQ(st[0].count, 10u);  // the copy of all three chunks
  EXPECT_EQ(st[1].srcOffset, 0u);
  EXPECT_EQ(st[1].count, 3u);
  EXPECT_EQ(st[2].dstOffset, 6u);
  EXPECT_EQ(st[2].count, 4u);
}

// Steps larger than maxStepElems: the program runs in passes, each over a share of
// every block, and no step exceeds the limit.
TEST(ScheduleFile, LargeCountsRunInPassesWithinTheStepLimit) {
  AlgoFile f = test::allReduceFile("passes", test::gridAllReduce(1, 4));
  CollArgs args;
  args.nranks = 4;
  args.count = 1001;
  args.elemSize = 4;
  args.maxStepElems = 64;
  Expected<Schedule> s = instantiate(f, f.programs[0], args);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const size_t perPass = f.programs[0].ranks[0].size();
  EXPECT_GT(s.value().steps.size(), perPass);
  EXPECT_EQ(s.value().steps.size() % perPass, 0u);
  for (const Step& st : s.value().steps) {
    if (st.op != OpKind::kCopy) {
      EXPECT_LE(st.count, 64u);  // messages fit a FIFO step
    }
  }
}

// A window program whose blocks exceed the window area: passes, each a share of every
// block packed into the area, its rounds after the last pass's; a lent buffer's offsets
// follow the buffer's.
TEST(ScheduleFile, WindowProgramsRunInPassesThatFitTheWindowArea) {
  AlgoFile f = test::allReduceFile("wag", test::windowAllGather(3));
  f.collective = Collective::kAllGather;
  CollArgs args;
  args.collective = Collective::kAllGather;
  args.nranks = 3;
  args.rank = 1;
  args.count = 1001;
  args.elemSize = 4;
  args.windowElems = 256;
  Expected<Schedule> s = instantiate(f, f.programs[0], args);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  int rounds = 0;
  uint64_t put = 0, putFrom = 0;
  for (const Step& st : s.value().steps) {
    rounds += st.op == OpKind::kBeginRound;
    if (st.op == OpKind::kPut) {
      EXPECT_EQ(st.dstOffset, 0u);
      EXPECT_LE(st.count, 256u);
      EXPECT_EQ(st.srcOffset, putFrom);  // the passes cover the input in order
      putFrom += st.count;
      put = st.count;
    }
    if (st.op == OpKind::kCopyPeer) {
      EXPECT_EQ(st.count, put);
      EXPECT_EQ(st.srcOffset, 0u);
      EXPECT_EQ(st.bufOffset, putFrom - put);
      EXPECT_EQ(st.dstOffset, st.recvPeer * 1001u + putFrom - put);
    }
  }
  EXPECT_EQ(rounds, 4);  // 1001 elements in shares of at most 256
  EXPECT_EQ(putFrom, 1001u);
}

std::string parseError(const std::string& text) {
  Expected<AlgoFile> f = parseAlgoFile(text);
  return f.isOk() ? "" : f.status().message();
}

std::string withHeader(const std::string& header, const std::string& steps) {
  return "{\"format\": \"braid-schedule\", \"version\": 1, \"name\": \"t\", "
         "\"collective\": \"allreduce\", " +
         header + "\"programs\": [{\"nranks\": 2, \"chunksPerBlock\": 2, \"ranks\": [" + steps +
         "]}]}";
}

TEST(ScheduleFile, MalformedFilesAreRefusedNamingWhatIsWrong) {
  const std::string ok0 =
      "[{\"op\": \"send\", \"src\": \"input\", \"srcChunk\": 0, \"sendPeer\": 1}]";
  const std::string ok1 =
      "[{\"op\": \"recv\", \"dst\": \"output\", \"dstChunk\": 0, \"recvPeer\": 0}]";
  EXPECT_EQ(parseError(withHeader("\"ranks\": [2], ", ok0 + "," + ok1)), "");
  EXPECT_NE(
      parseError(withHeader("\"ranks\": [2, 4], ", ok0 + "," + ok1)).find("no program for 4 ranks"),
      std::string::npos);
  EXPECT_NE(parseError(withHeader("\"ranks\": [2], \"sizes\": {\"min\": 8, \"minInclusive\": "
                                  "true, \"max\": 8, \"maxInclusive\": false}, ",
                                  ok0 + "," + ok1))
                .find("contains no size"),
            std::string::npos);
  EXPECT_NE(parseError(withHeader("\"ranks\": [2], \"sizes\": {\"max\": 8}, ", ok0 + "," + ok1))
                .find("without \"maxInclusive\""),
            std::string::npos);
  const std::string outside =
      "[{\"op\": \"send\", \"src\": \"input\", \"srcChunk\": 2, \"sendPeer\": 1}]";
  const std::string err = parseError(withHeader("\"ranks\": [2], ", outside + "," + ok1));
  EXPECT_NE(err.find("rank 0, step 0"), std::string::npos) << err;
  EXPECT_NE(err.find("lie outside input's 2 chunks"), std::string::npos) << err;
  const std::string unknown = "[{\"op\": \"nop\"}]";
  EXPECT_NE(
      parseError(withHeader("\"ranks\": [2], ", unknown + "," + ok1)).find("unknown op 'nop'"),
      std::string::npos);
  // avg is served where the file lists it; "any" is every op but avg.
  const auto avg =
      parseAlgoFile(withHeader("\"ranks\": [2], \"ops\": [\"avg\"], ", ok0 + "," + ok1));
  ASSERT_TRUE(avg.isOk()) << avg.status().message();
  EXPECT_TRUE(avg.value().allowsOp("avg"));
  EXPECT_FALSE(avg.value().allowsOp("sum"));
  const auto any = parseAlgoFile(withHeader("\"ranks\": [2], ", ok0 + "," + ok1));
  ASSERT_TRUE(any.isOk()) << any.status().message();
  EXPECT_FALSE(any.value().allowsOp("avg"));
  EXPECT_TRUE(any.value().allowsOp("max"));
  std::string v2 = withHeader("\"ranks\": [2], ", ok0 + "," + ok1);
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 2");
  EXPECT_NE(parseError(v2).find("version 2 is not one this Braid reads"), std::string::npos)
      << parseError(v2);
  EXPECT_NE(parseError("{\"format\": ").find("JSON line 1"), std::string::npos);
}

TEST(ScheduleFile, RankRulesExpandToTheirCounts) {
  const std::string two =
      "[{\"op\": \"copy\", \"src\": \"input\", \"srcChunk\": 0, \"dst\": "
      "\"output\", \"dstChunk\": 0, \"chunks\": 1}]";
  auto rule = [&](const std::string& spec) {
    std::string progs;
    for (int n : {1, 2, 4}) {
      std::string ranks;
      for (int r = 0; r < n; ++r) ranks += (r ? "," : "") + two;
      progs += std::string(progs.empty() ? "" : ",") + "{\"nranks\": " + std::to_string(n) +
               ", \"ranks\": [" + ranks + "]}";
    }
    return parseAlgoFile(
        "{\"format\": \"braid-schedule\", \"version\": 1, \"name\": \"t\", "
        "\"collective\": \"allreduce\", \"ranks\": \"" +
        spec + "\", \"programs\": [" + progs + "]}");
  };
  Expected<AlgoFile> pow2 = rule("pow2:1..4");
  ASSERT_TRUE(pow2.isOk()) << pow2.status().message();
  EXPECT_EQ(pow2.value().nranks, (std::vector<int>{1, 2, 4}));
  EXPECT_NE(rule("1..4").status().message().find("claims 3 ranks"), std::string::npos);
}

}  // namespace
}  // namespace braid::algo
