// Braid's libnccl.so.2 under a program built against NVIDIA's nccl.h
// (nccl_dropin_check.c), run as 2 and 4 processes on host buffers with the
// NULL stream; and its exports against every function the header declares.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/integration/spawn.h"

namespace {

#ifdef NCCL_DROPIN_CHECK
constexpr bool kBuilt = true;
#else
constexpr bool kBuilt = false;
#define NCCL_DROPIN_CHECK ""
#define NCCL_DROPIN_LIB_DIR ""
#define NCCL_HEADER "/usr/local/cuda/include/nccl.h"
#endif

#define SKIP_WITHOUT_DROPIN()                                                              \
  do {                                                                                     \
    if (!kBuilt) GTEST_SKIP() << "the NCCL drop-in was not built: no nccl.h at configure time"; \
    if (!std::ifstream(NCCL_HEADER)) GTEST_SKIP() << NCCL_HEADER << " is missing";          \
  } while (0)

using braid::test::runCommand;

// The program with the build's library first on the search path, so a
// system libnccl.so.2 (NVIDIA's, under LD_LIBRARY_PATH) cannot stand in.
int check(const std::string& scenario, int nranks, std::string* out) {
  return runCommand(std::string("env LD_LIBRARY_PATH=") + NCCL_DROPIN_LIB_DIR + " " + NCCL_DROPIN_CHECK +
                 " " + scenario + " " + std::to_string(nranks),
             out);
}

void expectRanksPassed(const std::string& scenario, int nranks) {
  std::string out;
  ASSERT_EQ(check(scenario, nranks, &out), 0) << out;
  for (int r = 0; r < nranks; ++r) {
    EXPECT_NE(out.find("rank " + std::to_string(r) + ": " + scenario + " ok"), std::string::npos)
        << out;
  }
}

class NcclDropInRanks : public ::testing::TestWithParam<int> {};

TEST_P(NcclDropInRanks, EveryCollectiveAndSendRecvOnHostBuffers) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("collectives", GetParam());
}

TEST_P(NcclDropInRanks, AllReduceOfEveryDatatypeAndOp) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("dtypes", GetParam());
}

TEST_P(NcclDropInRanks, SplitAndShrink) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("split", GetParam());
}

TEST_P(NcclDropInRanks, PreMulSum) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("premul", GetParam());
}

TEST_P(NcclDropInRanks, NonBlockingInitReportsInProgressThenSuccess) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("nonblocking", GetParam());
}

TEST_P(NcclDropInRanks, AbortFromAWatchdogThreadEndsABlockedCall) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("abort", GetParam());
}

TEST_P(NcclDropInRanks, SendRecvInPlaceAndToItselfAsNcclTestsCallsThem) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("sendrecv", GetParam());
}

TEST(NcclDropIn, SendRecvToItselfOnOneRank) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("sendrecv", 1);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NcclDropInRanks, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST(NcclDropIn, BadArgumentsReturnNcclCodes) {
  SKIP_WITHOUT_DROPIN();
  expectRanksPassed("badargs", 1);
}

TEST(NcclDropIn, InitAllDrivesSeveralRanksFromOneThread) {
  SKIP_WITHOUT_DROPIN();
  std::string out;
  ASSERT_EQ(check("initall", 3, &out), 0) << out;
  EXPECT_NE(out.find("initall ok"), std::string::npos) << out;
}

TEST(NcclDropIn, ErrorStringsAndVersionAreNccls) {
  SKIP_WITHOUT_DROPIN();
  std::string out;
  ASSERT_EQ(check("strings", 1, &out), 0) << out;
  EXPECT_NE(out.find("strings ok"), std::string::npos) << out;
  // The program ran on this build's library, not on another libnccl.so.2.
  EXPECT_NE(out.find(std::string("library: ") + NCCL_DROPIN_LIB_DIR + "/libnccl.so.2"),
            std::string::npos)
      << out;
}

// Every function nccl.h declares (comments and string literals removed, so a
// deprecation message naming a function does not count).
std::set<std::string> declaredFunctions(const std::string& header) {
  std::ifstream f(header);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  text = std::regex_replace(text, std::regex(R"(/\*[\s\S]*?\*/)"), " ");
  text = std::regex_replace(text, std::regex(R"(//[^\n]*)"), " ");
  text = std::regex_replace(text, std::regex(R"("[^"\n]*")"), "\"\"");
  std::set<std::string> names;
  std::regex decl(R"(\b(p?nccl[A-Z][A-Za-z0-9_]*)\s*\()");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl); it != std::sregex_iterator();
       ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

TEST(NcclDropIn, ExportsEveryFunctionOfTheHeaderAndNothingElse) {
  SKIP_WITHOUT_DROPIN();
  const std::set<std::string> declared = declaredFunctions(NCCL_HEADER);
  // NCCL 2.28 declares 41 functions, each with its pnccl alias.
  ASSERT_GE(declared.size(), 80u) << "the header parse found too little";
  for (const std::string& name : declared) {
    if (name[0] == 'p') continue;
    EXPECT_TRUE(declared.count("p" + name)) << name << " has no pnccl alias in the header";
  }
  std::string out;
  ASSERT_EQ(runCommand(std::string("nm -D --defined-only ") + NCCL_DROPIN_LIB_DIR + "/libnccl.so.2", &out),
            0)
      << out;
  std::set<std::string> exported;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string addr, type, name;
    if (!(fields >> addr >> type >> name)) continue;
    if (type == "A") continue;  // the version node
    exported.insert(name.substr(0, name.find('@')));
  }
  for (const std::string& name : declared) EXPECT_TRUE(exported.count(name)) << name << " is missing";
  for (const std::string& name : exported) {
    EXPECT_TRUE(name.rfind("nccl", 0) == 0 || name.rfind("pnccl", 0) == 0)
        << name << " is exported but is not NCCL's";
  }
}

}  // namespace
