// Braid's libnccl.so.2 under a program built against NVIDIA's nccl.h
// (nccl_dropin_check.c), run as 2 and 4 processes on host buffers with the
// NULL stream; and its exports against every function the header declares.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
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
#define NCCL_PROFILER_PLUGIN_PATH ""
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

// One rank's plugin output (profiler_plugin.c), line by line.
std::vector<std::string> pluginLines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

// What follows "start ID parent=P rank=R " in a start line; ID and P through the pointers.
std::string startBody(const std::string& line, long* id, long* parent) {
  std::smatch m;
  if (!std::regex_match(line, m, std::regex(R"(start (\d+) parent=(\d+) rank=\d+ (.*))"))) return "";
  *id = std::stol(m[1]);
  *parent = std::stol(m[2]);
  return m[3];
}

TEST_P(NcclDropInRanks, ProfilerPluginSeesEveryCallStartAndStopWithItsSize) {
  SKIP_WITHOUT_DROPIN();
  const int n = GetParam();
  const std::string base = "/tmp/issue-49-profiler-" + std::to_string(getpid());
  std::string out;
  ASSERT_EQ(runCommand(std::string("env LD_LIBRARY_PATH=") + NCCL_DROPIN_LIB_DIR +
                           " NCCL_PROFILER_PLUGIN=" + NCCL_PROFILER_PLUGIN_PATH +
                           " BRAID_TEST_PROFILER_OUT=" + base + " " + NCCL_DROPIN_CHECK +
                           " profiled " + std::to_string(n),
                       &out),
            0)
      << out;
  for (int r = 0; r < n; ++r) {
    const std::string path = base + ".rank" + std::to_string(r);
    const std::vector<std::string> lines = pluginLines(path);
    std::remove(path.c_str());
    ASSERT_FALSE(lines.empty()) << "rank " << r << ": the plugin wrote nothing:\n" << out;
    EXPECT_EQ(lines.front(), "init nranks=" + std::to_string(n) + " rank=" + std::to_string(r));
    EXPECT_EQ(lines.back(), "finalize") << "rank " << r;
    // The calls as the program made them (nccl_dropin_check.c, profiled()), NCCL's names.
    const std::string next = std::to_string((r + 1) % n), prev = std::to_string((r + n - 1) % n);
    const std::vector<std::string> wantCalls = {
        "coll AllReduce count=1000 ncclInt32 seq=0 root=0",
        "coll AllGather count=300 ncclFloat32 seq=0 root=0",
        "coll Broadcast count=77 ncclInt32 seq=0 root=" + std::to_string(n - 1),
        "coll ReduceScatter count=50 ncclFloat32 seq=0 root=0",
        "p2p Send count=11 ncclInt32 peer=" + next,
        "p2p Recv count=11 ncclInt32 peer=" + prev,
        "coll AllReduce count=5 ncclInt32 seq=1 root=0",
        "coll AllReduce count=6 ncclInt32 seq=2 root=0",
    };
    std::vector<std::string> calls;
    std::map<long, std::string> open;  // started, not yet stopped: id -> kind
    std::set<long> groups;
    int collApis = 0, p2pApis = 0, groupApis = 0;
    for (const std::string& line : lines) {
      long id = 0, parent = 0;
      const std::string body = startBody(line, &id, &parent);
      if (!body.empty()) {
        const std::string kind = body.substr(0, body.find(' '));
        open[id] = kind;
        if (kind == "group") groups.insert(id);
        collApis += kind == "collapi";
        p2pApis += kind == "p2papi";
        groupApis += kind == "groupapi";
        if (kind == "coll" || kind == "p2p") {
          // Inside the group event that was started for it, which is its parent.
          const size_t g = body.find(" group=");
          ASSERT_NE(g, std::string::npos) << line;
          const long group = std::stol(body.substr(g + 7));
          EXPECT_TRUE(groups.count(group) && open.count(group) && parent == group) << line;
          calls.push_back(body.substr(0, g));
        }
      } else if (line.rfind("stop ", 0) == 0) {
        const long id = std::stol(line.substr(5));
        EXPECT_EQ(open.erase(id), 1u) << "rank " << r << ": stop of an event not started: " << line;
      }
    }
    EXPECT_TRUE(open.empty()) << "rank " << r << ": " << open.size() << " events never stopped";
    EXPECT_EQ(calls, wantCalls) << "rank " << r;
    EXPECT_EQ(collApis, 6) << "rank " << r;
    EXPECT_EQ(p2pApis, 2) << "rank " << r;
    EXPECT_EQ(groupApis, 6) << "rank " << r;  // one per call alone, one per group
  }
}

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
