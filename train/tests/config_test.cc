// braid-train's command line and its start-up rules.
#include <gtest/gtest.h>

#include "train/config.h"

namespace braid::train {
namespace {

TrainConfig parse(const std::vector<std::string>& args) {
  TrainConfig c;
  std::string error;
  EXPECT_TRUE(parseTrainArgs(args, &c, &error)) << error;
  return c;
}

TEST(TrainConfig, ParsesTheIssuesCommandLine) {
  TrainConfig c = parse({"--dp", "2", "--tp", "2", "--pp", "1", "--ep", "1", "--zero", "1",
                         "--pp-schedule", "gpipe", "--micro-batches", "4", "--global-batch", "16",
                         "--model", "small", "--steps", "50", "--seed", "1234", "--log-json",
                         "run.jsonl"});
  EXPECT_EQ(c.layout.dp, 2);
  EXPECT_EQ(c.layout.tp, 2);
  EXPECT_EQ(c.layout.zero, 1);
  EXPECT_EQ(c.layout.schedule, PipeSchedule::kGpipe);
  EXPECT_EQ(c.layout.microBatches, 4);
  EXPECT_EQ(c.globalBatch, 16);
  EXPECT_EQ(c.model.dModel, 256);
  EXPECT_EQ(c.model.ff, 1024);
  EXPECT_EQ(c.steps, 50);
  EXPECT_EQ(c.seed, 1234u);
  EXPECT_EQ(c.logJson, "run.jsonl");
  EXPECT_FALSE(c.model.moe);
  EXPECT_EQ(validate(c, 4), "");
}

TEST(TrainConfig, ExpertParallelismImpliesMoe) {
  TrainConfig c = parse({"--ep", "2", "--experts", "6", "--top-k", "1", "--capacity-factor", "1.5"});
  EXPECT_TRUE(c.model.moe);
  EXPECT_EQ(c.model.experts, 6);
  EXPECT_EQ(c.model.topK, 1);
  EXPECT_DOUBLE_EQ(c.model.capacityFactor, 1.5);
}

TEST(TrainConfig, RejectsBadFlagsWithTheirName) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus", "1"}, "unknown option --bogus"},
      {{"--dp"}, "missing value after --dp"},
      {{"--dp", "two"}, "--dp wants an integer"},
      {{"--lr", "fast"}, "--lr wants a number"},
      {{"--pp-schedule", "zigzag"}, "--pp-schedule is gpipe or 1f1b"},
      {{"--model", "huge"}, "--model is micro, tiny or small"},
  };
  for (const auto& [args, message] : cases) {
    TrainConfig c;
    std::string error;
    EXPECT_FALSE(parseTrainArgs(args, &c, &error));
    EXPECT_NE(error.find(message), std::string::npos) << error;
  }
}

TEST(TrainConfig, ValidateStatesEachRule) {
  TrainConfig c = parse({"--model", "tiny"});
  c.layout.tp = 8;
  EXPECT_NE(validate(c, 8).find("--tp 8 must divide the 4 attention heads"), std::string::npos);
  c = parse({"--pp", "3"});
  EXPECT_NE(validate(c, 3).find("--pp 3 must divide the 4 layers"), std::string::npos);
  c = parse({"--dp", "2", "--micro-batches", "3", "--global-batch", "8"});
  EXPECT_NE(validate(c, 2).find("multiple of dp x ep x micro-batches = 2 x 1 x 3 = 6"),
            std::string::npos);
  c = parse({"--moe", "--top-k", "5"});
  EXPECT_NE(validate(c, 1).find("--top-k 5 must be between 1 and --experts 4"), std::string::npos);
  c = parse({"--zero", "2"});
  EXPECT_NE(validate(c, 1).find("--zero is 0 or 1"), std::string::npos);
  c = parse({"--dp", "2"});
  EXPECT_NE(validate(c, 4).find("but the job has 4 ranks"), std::string::npos);
}

}  // namespace
}  // namespace braid::train
