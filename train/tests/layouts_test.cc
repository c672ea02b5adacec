// The layout matrix: braid-train under braidrun on 4 and 2 ranks, each layout
// 30 steps from the same seed and global batch as the 1-rank run, must give
// the same loss at every step (rtol 1e-4) and the same weights at the end
// (1e-4). The same layout twice, and a run resumed from a checkpoint, must be
// bit-identical. Bad layouts must stop at start-up with a clear message.
// Logs and parameter dumps are parsed here, independently of braid-train's
// own compare command (which is tested too).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

// A scratch directory per test process, removed at exit.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/braid-train-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

std::string tempDir() {
  static ScratchDir dir;
  return dir.path;
}

// 16 KiB buckets: about one per block of the micro model, so gradients are
// reduced (and ZeRO-sharded) in several buckets. The text is the repository's
// README, so the tests do not depend on the fortunes package; copied once per
// test process, so that an edit of the README while the tests run cannot give
// the reference and a layout different data.
const std::string kCommon = [] {
  const std::string text = tempDir() + "/corpus.txt";
  std::filesystem::copy_file(BRAID_TRAIN_TEXT, text);
  return " --model micro --steps 30 --global-batch 8 --seed 5 --lr 1e-3 --bucket-kb 16 --quiet"
         " --data " +
         text;
}();

// Runs braid-train on `ranks` ranks (directly when 1); returns the exit code
// and fills *output with what it printed.
int train(int ranks, const std::string& args, std::string* output = nullptr) {
  const std::string log = tempDir() + "/out.txt";
  std::string cmd = ranks == 1 ? std::string(BRAID_TRAIN_PATH)
                               : std::string(BRAIDRUN_PATH) + " -n " + std::to_string(ranks) +
                                     " " + BRAID_TRAIN_PATH;
  cmd += " " + args + " > " + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  if (output != nullptr) *output = ss.str();
  if (status != 0) ADD_FAILURE() << cmd << "\n" << ss.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::map<int, double> losses(const std::string& path) {
  std::map<int, double> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t s = line.find("\"step\":"), l = line.find("\"loss\":");
    if (s != std::string::npos && l != std::string::npos) {
      out[std::stoi(line.substr(s + 7))] = std::stod(line.substr(l + 7));
    }
  }
  return out;
}

std::map<std::string, std::vector<double>> params(const std::string& path) {
  std::map<std::string, std::vector<double>> out;
  std::ifstream in(path);
  std::string name;
  size_t n = 0;
  while (in >> name >> n) {
    auto& v = out[name];
    v.resize(n);
    for (double& x : v) in >> x;
  }
  return out;
}

// Reference: the 1-rank run of the dense or the MoE model, made once per process.
std::string reference(bool moe) {
  const std::string base = tempDir() + (moe ? "/ref_moe" : "/ref_dense");
  static std::map<bool, bool> made;
  if (!made[moe]) {
    train(1, kCommon + (moe ? " --moe" : "") + " --log-json " + base + ".jsonl --dump-params " +
                 base + ".params");
    made[moe] = true;
  }
  return base;
}

void expectSameRun(const std::string& a, const std::string& b, double rtol, double atol,
                   size_t minSteps) {
  auto la = losses(a + ".jsonl"), lb = losses(b + ".jsonl");
  size_t common = 0;
  for (const auto& [step, want] : la) {
    if (!lb.count(step)) continue;
    ++common;
    if (rtol == 0) {
      EXPECT_EQ(lb[step], want) << "step " << step;
    } else {
      EXPECT_LE(std::fabs(lb[step] - want), rtol * std::fabs(want)) << "step " << step;
    }
  }
  EXPECT_GE(common, minSteps);
  auto pa = params(a + ".params"), pb = params(b + ".params");
  ASSERT_FALSE(pa.empty());
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& [name, want] : pa) {
    const auto& got = pb[name];
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < want.size(); ++i) {
      if (atol == 0) {
        ASSERT_EQ(got[i], want[i]) << name << "[" << i << "]";
      } else {
        ASSERT_NEAR(got[i], want[i], atol) << name << "[" << i << "]";
      }
    }
  }
}

struct LayoutCase {
  const char* name;
  int ranks;
  const char* args;
  bool moe;
};

void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

class Layouts : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(Layouts, MatchesOneRankRun) {
  const LayoutCase& c = GetParam();
  const std::string ref = reference(c.moe);
  const std::string out = tempDir() + "/" + c.name;
  ASSERT_EQ(train(c.ranks, kCommon + " " + c.args + (c.moe ? " --moe" : "") + " --log-json " +
                               out + ".jsonl --dump-params " + out + ".params"),
            0);
  expectSameRun(ref, out, 1e-4, 1e-4, 30);
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, Layouts,
    ::testing::Values(
        LayoutCase{"dp4", 4, "--dp 4", false}, LayoutCase{"dp4_zero", 4, "--dp 4 --zero 1", false},
        LayoutCase{"tp4", 4, "--tp 4", false},
        LayoutCase{"pp4_1f1b", 4, "--pp 4 --micro-batches 4 --pp-schedule 1f1b", false},
        LayoutCase{"pp4_gpipe", 4, "--pp 4 --micro-batches 2 --pp-schedule gpipe", false},
        LayoutCase{"dp2_tp2", 4, "--dp 2 --tp 2", false},
        LayoutCase{"tp2_pp2", 4, "--tp 2 --pp 2 --micro-batches 4 --pp-schedule gpipe", false},
        LayoutCase{"dp2_pp2_zero", 4, "--dp 2 --pp 2 --micro-batches 2 --zero 1", false},
        LayoutCase{"ep2_dp2", 4, "--ep 2 --dp 2", true},
        LayoutCase{"ep2_dp2_zero", 4, "--ep 2 --dp 2 --zero 1", true},
        LayoutCase{"ep4", 4, "--ep 4", true},
        LayoutCase{"ep2_tp2", 4, "--ep 2 --tp 2", true},
        LayoutCase{"ep2_pp2", 4, "--ep 2 --pp 2 --micro-batches 2", true},
        LayoutCase{"dp2", 2, "--dp 2", false}, LayoutCase{"dp2_zero", 2, "--dp 2 --zero 1", false},
        LayoutCase{"tp2", 2, "--tp 2", false},
        LayoutCase{"pp2", 2, "--pp 2 --micro-batches 4", false},
        LayoutCase{"ep2", 2, "--ep 2", true}),
    [](const ::testing::TestParamInfo<LayoutCase>& i) { return std::string(i.param.name); });

TEST(Determinism, SameLayoutTwiceIsBitIdentical) {
  const std::string a = tempDir() + "/twice_a", b = tempDir() + "/twice_b";
  for (const auto& out : {a, b}) {
    ASSERT_EQ(train(4, kCommon + " --dp 2 --tp 2 --log-json " + out + ".jsonl --dump-params " +
                           out + ".params"),
              0);
  }
  expectSameRun(a, b, 0, 0, 30);
}

// Train 30 steps; train 15, save, resume to 30: steps 15..29 and the final
// weights are bit-identical.
void expectResumeIdentical(const std::string& name, const std::string& layout) {
  const std::string full = tempDir() + "/" + name + "_full", part = tempDir() + "/" + name + "_part";
  const std::string ck = tempDir() + "/" + name + "_ck";
  ASSERT_EQ(train(4, kCommon + " " + layout + " --log-json " + full + ".jsonl --dump-params " +
                         full + ".params"),
            0);
  std::string half = kCommon + " " + layout + " --save " + ck;
  half.replace(half.find("--steps 30"), 10, "--steps 15");
  ASSERT_EQ(train(4, half), 0);
  ASSERT_EQ(train(4, kCommon + " " + layout + " --resume " + ck + " --log-json " + part +
                         ".jsonl --dump-params " + part + ".params"),
            0);
  EXPECT_EQ(losses(part + ".jsonl").size(), 15u);
  expectSameRun(full, part, 0, 0, 15);
}

TEST(Resume, PipelineZeroIsBitIdentical) {
  expectResumeIdentical("resume_pp", "--dp 2 --pp 2 --micro-batches 2 --zero 1");
}

TEST(Resume, ExpertTensorIsBitIdentical) { expectResumeIdentical("resume_ep", "--ep 2 --tp 2 --moe"); }

TEST(Compare, ExitsNonZeroOnDivergenceAndZeroWhenEqual) {
  const std::string ref = reference(false), other = tempDir() + "/seed6";
  std::string args = kCommon + " --log-json " + other + ".jsonl";
  args.replace(args.find("--seed 5"), 8, "--seed 6");
  ASSERT_EQ(train(1, args), 0);
  const std::string tool = BRAID_TRAIN_PATH;
  EXPECT_EQ(std::system((tool + " compare " + ref + ".jsonl " + ref + ".jsonl --rtol 0 >/dev/null").c_str()), 0);
  const int diverged =
      std::system((tool + " compare " + ref + ".jsonl " + other + ".jsonl --rtol 1e-4 >/dev/null").c_str());
  EXPECT_TRUE(WIFEXITED(diverged) && WEXITSTATUS(diverged) == 1);
}

TEST(DefaultCorpus, TrainsOnTheFortunesCorpus) {
  if (!std::filesystem::exists("/usr/share/games/fortunes")) {
    GTEST_SKIP() << "the fortunes package is not installed (scripts/setup.sh installs it)";
  }
  std::string out;
  ASSERT_EQ(train(1, "--model micro --steps 3 --global-batch 4", &out), 0);
  EXPECT_NE(out.find("corpus /usr/share/games/fortunes"), std::string::npos) << out;
  EXPECT_NE(out.find("step    2"), std::string::npos) << out;
}

struct BadLayout {
  int ranks;
  const char* args;
  const char* message;
};

TEST(StartUp, BadLayoutsStopWithAClearMessage) {
  const BadLayout cases[] = {
      {4, "--dp 3", "dp x tp x pp x ep = 3 x 1 x 1 x 1 = 3 but the job has 4 ranks"},
      {3, "--tp 3", "--tp 3 must divide the 4 attention heads"},
      {3, "--pp 3", "--pp 3 must divide the 4 layers"},
      {4, "--dp 4 --global-batch 6", "--global-batch 6 must be a multiple of dp x ep x micro-batches"},
      {2, "--ep 2 --experts 3", "--ep 2 must divide --experts 3"},
  };
  for (const BadLayout& c : cases) {
    std::string out;
    const std::string cmd = std::string(BRAIDRUN_PATH) + " -n " + std::to_string(c.ranks) + " " +
                            BRAID_TRAIN_PATH + kCommon + " " + c.args + " > " + tempDir() +
                            "/bad.txt 2>&1";
    const int status = std::system(cmd.c_str());
    EXPECT_NE(status, 0) << c.args;
    std::ifstream in(tempDir() + "/bad.txt");
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NE(ss.str().find(c.message), std::string::npos) << c.args << "\n" << ss.str();
  }
}

}  // namespace
