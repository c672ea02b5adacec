// Integration tests of the braidrun launcher: runs the real binary (BRAIDRUN_PATH) over small
// `sh -c` ranks and checks exit codes, the rank environment, output forwarding, the failure
// policy (grace, SIGTERM, SIGKILL) and signal forwarding. Needs nothing from the library.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/shm_segment_name.h"

#ifndef BRAIDRUN_PATH
#error "BRAIDRUN_PATH must name the braidrun binary (tests/integration/CMakeLists.txt sets it)"
#endif

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Result {
  int exit_code = -1;  // -1 when braidrun itself was killed by a signal
  int term_signal = 0;
  std::string out;
  std::string err;
  double seconds = 0;
};

// One braidrun process with its stdout and stderr captured. Every wait is bounded, so a
// braidrun that hangs fails the test instead of hanging it (and is SIGKILLed).
class Braidrun {
 public:
  explicit Braidrun(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& env = {}) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2: " << std::strerror(errno);
      return;
    }
    start_ = Clock::now();
    pid_ = fork();
    if (pid_ == 0) exec(args, env, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    fds_[0] = out[0];
    fds_[1] = err[0];
    if (pid_ < 0) ADD_FAILURE() << "fork: " << std::strerror(errno);
  }
  ~Braidrun() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }

  // Reads output until `done(stdout)` holds; false after `limit`.
  bool waitForStdout(const std::function<bool(const std::string&)>& done,
                     std::chrono::milliseconds limit) {
    auto deadline = Clock::now() + limit;
    while (!done(result_.out)) {
      if (Clock::now() >= deadline || !readSome(deadline)) return false;
    }
    return true;
  }

  void signal(int sig) { kill(pid_, sig); }

  // Reads to EOF and reaps braidrun; SIGKILLs it after `limit`.
  Result finish(std::chrono::milliseconds limit = 10s) {
    auto deadline = Clock::now() + limit;
    while ((fds_[0] >= 0 || fds_[1] >= 0) && readSome(deadline)) {
    }
    if (fds_[0] >= 0 || fds_[1] >= 0) {
      ADD_FAILURE() << "braidrun still running after " << limit.count() << " ms; killing it";
      kill(pid_, SIGKILL);
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    result_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result_.term_signal = WTERMSIG(status);
    return result_;
  }

 private:
  [[noreturn]] static void exec(const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& env, int out, int err) {
    // The test runner may have left signals ignored or blocked; braidrun must see defaults.
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(BRAIDRUN_PATH)};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(BRAIDRUN_PATH, argv.data());
    _exit(99);
  }

  // Waits for output up to `deadline` and appends it; false at the deadline.
  bool readSome(Clock::time_point deadline) {
    pollfd pfds[2] = {{fds_[0], POLLIN, 0}, {fds_[1], POLLIN, 0}};
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    int ready = poll(pfds, 2, static_cast<int>(left));
    if (ready == 0) return false;
    for (int i = 0; i < 2; ++i) {
      if (pfds[i].revents == 0) continue;
      char buffer[65536];
      ssize_t n = read(fds_[i], buffer, sizeof(buffer));
      if (n > 0) {
        (i == 0 ? result_.out : result_.err).append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds_[i]);
        fds_[i] = -1;
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int fds_[2] = {-1, -1};
  Clock::time_point start_;
  Result result_;
};

Result runBraidrun(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {}) {
  return Braidrun(args, env).finish();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) result.push_back(line);
  return result;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool matches(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

// A fresh directory where ranks leave files to order their steps without sleeping on it.
class SyncDir {
 public:
  SyncDir() {
    char pattern[] = "/tmp/braidrun_test.XXXXXX";
    if (mkdtemp(pattern) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    path_ = pattern;
  }
  ~SyncDir() { std::filesystem::remove_all(path_); }
  SyncDir(const SyncDir&) = delete;
  SyncDir& operator=(const SyncDir&) = delete;

  // For braidrun's -x: the ranks see it as $SYNC_DIR.
  std::string variable() const { return "SYNC_DIR=" + path_; }

 private:
  std::string path_;
};

}  // namespace

TEST(Braidrun, RemovesSharedMemoryAKilledRankLeft) {
  // The rank is the shell itself (braidrun execs it): $$ is its pid and its pid
  // namespace this one's, as in the names Braid's shm transport gives its segments.
  Result r = runBraidrun({"-n", "1", "--", "sh", "-c",
                          "ns=$(printf %x $(stat -L -c %i /proc/$$/ns/pid)); "
                          "touch /dev/shm/braid-$$-$ns-0123456789abcdef; echo $$; kill -9 $$"});
  EXPECT_NE(r.exit_code, 0);
  const size_t at = r.out.find("] ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string pid = r.out.substr(at + 2, r.out.find('\n', at) - at - 2);
  EXPECT_FALSE(std::filesystem::exists(
      "/dev/shm/" + braid::shmSegmentPrefix(std::stol(pid)) + "0123456789abcdef"))
      << r.err;
  EXPECT_NE(r.err.find("removed 1 shared-memory segment(s) rank 0 left"), std::string::npos) << r.err;
}

TEST(Braidrun, AllRanksSucceedingExitsZero) {
  Result r = runBraidrun({"-n", "4", "--", "sh", "-c", "exit 0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(Braidrun, GivesEachRankItsEnvironment) {
  Result r = runBraidrun(
      {"-n", "3", "sh", "-c",
       "echo \"$BRAID_RANK $BRAID_WORLD_SIZE $BRAID_LOCAL_RANK $BRAID_LOCAL_SIZE $BRAID_ROOT "
       "$BRAID_SECRET\""},
      {{"BRAID_RANK", "99"}, {"BRAID_SECRET", "stale"}});  // inherited values are replaced
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::regex line_format(R"(\[(\d+)\] (\d+) 3 (\d+) 3 (127\.0\.0\.1:(\d+)) ([0-9a-f]{32}))");
  std::set<int> ranks;
  std::set<std::string> roots, secrets;
  for (const std::string& line : lines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_format)) << line;
    EXPECT_EQ(m[1], m[2]) << "prefix and BRAID_RANK differ: " << line;
    EXPECT_EQ(m[2], m[3]) << "BRAID_LOCAL_RANK differs from BRAID_RANK: " << line;
    int port = std::stoi(m[5]);
    EXPECT_GT(port, 0);
    EXPECT_LT(port, 65536);
    ranks.insert(std::stoi(m[2]));
    roots.insert(m[4]);
    secrets.insert(m[6]);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(roots.size(), 1u) << "every rank must get the same BRAID_ROOT";
  EXPECT_EQ(secrets.size(), 1u) << "every rank must get the same BRAID_SECRET";
}

TEST(Braidrun, SecretIsNewForEachRun) {
  std::vector<std::string> args{"-n", "1", "sh", "-c", "echo $BRAID_SECRET"};
  Result first = runBraidrun(args);
  Result second = runBraidrun(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(first.out, second.out);
}

TEST(Braidrun, UsesRootOptionAndExtraVariables) {
  Result r =
      runBraidrun({"--root", "10.1.2.3:29500", "-x", "FOO=bar", "-x", "FOO=baz", "-x",
                   "EMPTY=", "-n", "2", "sh", "-c", "echo \"$BRAID_ROOT $FOO [$EMPTY] $KEPT\""},
                  {{"KEPT", "inherited"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sorted(lines(r.out)),
            (std::vector<std::string>{"[0] 10.1.2.3:29500 baz [] inherited",
                                      "[1] 10.1.2.3:29500 baz [] inherited"}));
}

// The CPUs this test process may run on, in increasing order (braidrun inherits them).
std::vector<int> allowedCpusOfThisProcess() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(Braidrun, BindCorePutsRankROnTheRthAllowedCpu) {
  std::vector<int> cpus = allowedCpusOfThisProcess();
  ASSERT_FALSE(cpus.empty());
  int n = static_cast<int>(cpus.size()) + 1;  // one rank more than CPUs: the first CPU twice
  Result r = runBraidrun({"--bind", "core", "-n", std::to_string(n), "sh", "-c",
                          "grep Cpus_allowed_list /proc/self/status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> expected;
  for (int rank = 0; rank < n; ++rank) {
    expected.push_back("[" + std::to_string(rank) + "] Cpus_allowed_list:\t" +
                       std::to_string(cpus[static_cast<size_t>(rank) % cpus.size()]));
  }
  EXPECT_EQ(sorted(lines(r.out)), sorted(expected));
}

TEST(Braidrun, BindNoneRanksKeepBraidrunsCpus) {
  std::vector<int> cpus = allowedCpusOfThisProcess();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs to tell a bound rank from a free one";
  Result r = runBraidrun({"--bind", "none", "-n", std::to_string(cpus.size() + 1), "sh", "-c",
                          "grep Cpus_allowed_list /proc/self/status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(lines(r.out).size(), cpus.size() + 1) << r.out;
  for (const std::string& line : lines(r.out)) {
    EXPECT_TRUE(matches(line, R"(Cpus_allowed_list:\t\d+[-,])")) << line;
  }
}

// The default (--bind auto): ranks as many as the CPUs or more are bound like --bind core;
// fewer keep braidrun's CPUs.
TEST(Braidrun, DefaultBindsOnlyRanksThatFillTheCpus) {
  std::vector<int> cpus = allowedCpusOfThisProcess();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs to tell a bound rank from a free one";
  const int n = static_cast<int>(cpus.size());
  Result full = runBraidrun({"-n", std::to_string(n), "sh", "-c",
                             "grep Cpus_allowed_list /proc/self/status"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  std::vector<std::string> expected;
  for (int rank = 0; rank < n; ++rank) {
    expected.push_back("[" + std::to_string(rank) + "] Cpus_allowed_list:\t" +
                       std::to_string(cpus[static_cast<size_t>(rank)]));
  }
  EXPECT_EQ(sorted(lines(full.out)), sorted(expected));

  Result fewer = runBraidrun({"-n", std::to_string(n - 1), "sh", "-c",
                              "grep Cpus_allowed_list /proc/self/status"});
  ASSERT_EQ(fewer.exit_code, 0) << fewer.err;
  ASSERT_EQ(lines(fewer.out).size(), static_cast<size_t>(n - 1)) << fewer.out;
  for (const std::string& line : lines(fewer.out)) {
    EXPECT_TRUE(matches(line, R"(Cpus_allowed_list:\t\d+[-,])")) << line;
  }
}

TEST(Braidrun, PrefixesEachLineWithItsRankOnTheSameStream) {
  Result r = runBraidrun({"-n", "2", "sh", "-c",
                          "echo out$BRAID_RANK; echo err$BRAID_RANK >&2; printf 'a\\nb\\n';"
                          "printf tail$BRAID_RANK"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (std::string rank : {"0", "1"}) {
    std::string prefix = "[" + rank + "] ";
    std::vector<std::string> own;
    for (const std::string& line : lines(r.out)) {
      if (line.starts_with(prefix)) own.push_back(line);
    }
    EXPECT_EQ(own, (std::vector<std::string>{prefix + "out" + rank, prefix + "a", prefix + "b",
                                             prefix + "tail" + rank}))
        << r.out;
  }
  EXPECT_EQ(lines(r.out).size(), 8u) << r.out;
  EXPECT_EQ(sorted(lines(r.err)), (std::vector<std::string>{"[0] err0", "[1] err1"}));
}

TEST(Braidrun, NoPrefixPrintsLinesAsTheyAre) {
  Result r = runBraidrun({"--no-prefix", "-n", "2", "sh", "-c", "echo out$BRAID_RANK"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sorted(lines(r.out)), (std::vector<std::string>{"out0", "out1"}));
}

TEST(Braidrun, PrintsLinesLongerThan64KiBInPieces) {
  constexpr size_t kLength = 200000;  // 3 pieces of 64 KiB and one of 3392 bytes
  Result r = runBraidrun(
      {"-n", "1", "sh", "-c",
       "head -c " + std::to_string(kLength) + " /dev/zero | tr '\\000' x; echo; echo after"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> got = lines(r.out);
  ASSERT_EQ(got.size(), 5u);
  std::string joined;
  for (size_t i = 0; i + 1 < got.size(); ++i) {
    ASSERT_TRUE(got[i].starts_with("[0] ")) << "piece " << i << " lacks the prefix";
    EXPECT_LE(got[i].size(), 4u + 64 * 1024);
    joined += got[i].substr(4);
  }
  EXPECT_EQ(joined, std::string(kLength, 'x'));
  EXPECT_EQ(got.back(), "[0] after");
}

TEST(Braidrun, RankExitingNonZeroFailsTheRun) {
  Result r = runBraidrun(
      {"-n", "3", "--grace-ms", "200", "sh", "-c", "if [ \"$BRAID_RANK\" = 1 ]; then exit 3; fi"});
  EXPECT_EQ(r.exit_code, 3) << "documented: the first failing rank's exit code\n" << r.err;
  EXPECT_TRUE(matches(r.err, R"(braidrun: rank 1 \(pid \d+\) exited with code 3)")) << r.err;
}

TEST(Braidrun, RankKilledBySignalStopsTheOthers) {
  Result r = runBraidrun({"-n", "3", "--grace-ms", "200", "sh", "-c",
                          "if [ \"$BRAID_RANK\" = 1 ]; then kill -KILL $$; fi; exec sleep 30"});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_TRUE(matches(r.err, R"(braidrun: rank 1 \(pid \d+\) was killed by signal 9 \(Killed\))"))
      << r.err;
  EXPECT_TRUE(matches(r.err, "sending SIGTERM to ranks 0, 2")) << r.err;
  EXPECT_LT(r.seconds, 5.0) << "the sleeping ranks should have been stopped after 200 ms";
}

TEST(Braidrun, RankIgnoringSigtermIsKilled) {
  SyncDir sync;  // rank 1 fails only once rank 0 ignores SIGTERM
  Result r = runBraidrun({"-n", "2", "--grace-ms", "100", "-x", sync.variable(), "sh", "-c",
                          "if [ \"$BRAID_RANK\" = 1 ]; then"
                          "  while [ ! -e \"$SYNC_DIR/ready\" ]; do sleep 0.01; done; exit 1;"
                          "fi;"
                          "trap '' TERM; touch \"$SYNC_DIR/ready\"; while :; do sleep 0.1; done"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(matches(r.err, "sending SIGTERM to rank 0")) << r.err;
  EXPECT_TRUE(matches(r.err, "SIGTERM was sent 2000 ms ago; sending SIGKILL to rank 0")) << r.err;
  EXPECT_GE(r.seconds, 2.0) << "SIGKILL only 2 s after SIGTERM";
  EXPECT_LT(r.seconds, 6.0);
}

TEST(Braidrun, GracePeriodLetsOtherRanksReportTheFailure) {
  // Rank 0 notices that rank 1 is gone (reaped by braidrun: `kill -0` fails), reports it and
  // fails in turn, well within the grace period.
  SyncDir sync;
  Result r =
      runBraidrun({"-n", "2", "--grace-ms", "5000", "-x", sync.variable(), "sh", "-c",
                   "if [ \"$BRAID_RANK\" = 1 ]; then"
                   "  echo $$ > \"$SYNC_DIR/tmp\"; mv \"$SYNC_DIR/tmp\" \"$SYNC_DIR/pid1\";"
                   "  exit 1;"
                   "fi;"
                   "while [ ! -e \"$SYNC_DIR/pid1\" ]; do sleep 0.01; done;"
                   "while kill -0 $(cat \"$SYNC_DIR/pid1\") 2>/dev/null; do sleep 0.01; done;"
                   "echo 'peer 1 is gone'; exit 4"});
  EXPECT_EQ(r.exit_code, 1) << "rank 1 failed first\n" << r.err;
  EXPECT_TRUE(matches(r.out, R"(\[0\] peer 1 is gone)")) << r.out;
  EXPECT_TRUE(matches(r.err, R"(rank 1 \(pid \d+\) exited with code 1)")) << r.err;
  EXPECT_TRUE(matches(r.err, R"(rank 0 \(pid \d+\) exited with code 4)")) << r.err;
  EXPECT_FALSE(matches(r.err, "SIGTERM")) << r.err;
  EXPECT_LT(r.seconds, 4.0) << "no need to wait out the grace once every rank has exited";
}

TEST(Braidrun, CommandNotFoundFailsWithAClearMessage) {
  Result r = runBraidrun({"-n", "2", "--grace-ms", "100", "braidrun-test-no-such-command"});
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_TRUE(matches(r.err, "cannot execute 'braidrun-test-no-such-command'")) << r.err;
  EXPECT_TRUE(matches(r.err, R"(rank \d \(pid \d+\) exited with code 127)")) << r.err;
}

TEST(Braidrun, BadCommandLinesExitTwoWithUsage) {
  // clang-format off
  const std::vector<std::vector<std::string>> bad = {
      {"-n", "0", "true"}, {"-n", "1025", "true"}, {"-n", "two", "true"}, {"-n", "2"}, {"true"},
      {"-n"}, {"--bogus", "-n", "1", "true"}, {"-n", "1", "-x", "NOVALUE", "true"},
      {"-n", "1", "-x", "BRAID_RANK=5", "true"}, {"--grace-ms", "-5", "-n", "1", "true"},
      {"--timeout", "0", "-n", "1", "true"}, {"--root", "nocolon", "-n", "1", "true"},
      {"--bind", "socket", "-n", "1", "true"}, {"-n", "1", "--bind"}};
  // clang-format on
  for (const auto& args : bad) {
    Result r = runBraidrun(args);
    std::string shown;
    for (const std::string& a : args) shown += a + " ";
    EXPECT_EQ(r.exit_code, 2) << shown;
    EXPECT_TRUE(matches(r.err, "^braidrun: .+\nusage: braidrun")) << shown << "\n" << r.err;
  }
}

TEST(Braidrun, HelpExitsZero) {
  Result r = runBraidrun({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(matches(r.out, "usage: braidrun")) << r.out;
  EXPECT_TRUE(matches(r.out, "BRAID_SECRET")) << r.out;
}

TEST(Braidrun, TimeoutStopsTheRun) {
  Result r = runBraidrun({"--timeout", "0.3", "-n", "2", "sh", "-c", "exec sleep 30"});
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_TRUE(matches(r.err, R"(timed out after 300 ms \(--timeout\))")) << r.err;
  EXPECT_LT(r.seconds, 5.0);
}

class BraidrunSignal : public ::testing::TestWithParam<int> {};

TEST_P(BraidrunSignal, IsForwardedToEveryRank) {
  int sig = GetParam();
  std::string name = sigabbrev_np(sig);
  Braidrun braidrun({"-n", "3", "sh", "-c",
                     "trap 'echo got " + name + "; exit 0' " + name +
                         "; echo ready; while :; do sleep 0.05; done"});
  ASSERT_TRUE(
      braidrun.waitForStdout([](const std::string& out) { return count(out, "ready") == 3; }, 5s));
  braidrun.signal(sig);
  Result r = braidrun.finish();
  EXPECT_EQ(r.exit_code, 0) << "every rank handled the signal and exited 0\n" << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(count(r.out, "[" + std::to_string(rank) + "] got " + name + "\n"), 1u) << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, BraidrunSignal,
                         ::testing::Values(SIGTERM, SIGINT, SIGHUP, SIGUSR1),
                         [](const auto& info) { return std::string(sigabbrev_np(info.param)); });
