// Test harness: runs ranks as real processes (fork), each with Braid's launcher
// environment (BRAID_RANK, BRAID_WORLD_SIZE, BRAID_ROOT, BRAID_SECRET) and its
// output captured to a file, and reports how each one ended.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace braid::test {

struct RankOutcome {
  pid_t pid = 0;
  int exitCode = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string output;
  double endSeconds = 0;  // since the start of the run
};

inline int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline std::string randomHex() {
  unsigned char b[16];
  while (getrandom(b, sizeof(b), 0) != sizeof(b)) {
  }
  char out[33];
  for (int i = 0; i < 16; ++i) snprintf(out + 2 * i, 3, "%02x", b[i]);
  return out;
}

using Env = std::map<std::string, std::string>;

// The launcher environment for one job of n ranks.
inline Env jobEnv(int n) {
  return {{"BRAID_WORLD_SIZE", std::to_string(n)},
          {"BRAID_ROOT", "127.0.0.1:" + std::to_string(freePort())},
          {"BRAID_SECRET", randomHex()}};
}

// Runs body(rank) in n child processes. `during` (optional) runs in the parent
// while they run, given their pids. Children still alive after timeoutSec are
// killed (and reported as killed).
inline std::vector<RankOutcome> runRanks(
    int n, const Env& env, const std::function<int(int)>& body, int timeoutSec = 120,
    const std::function<void(const std::vector<pid_t>&)>& during = nullptr) {
  std::vector<RankOutcome> out(n);
  std::vector<std::string> logs(n);
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r) {
    logs[r] = "/tmp/braid-test-" + std::to_string(getpid()) + "-" + std::to_string(r) + ".log";
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open(logs[r].c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      setenv("BRAID_RANK", std::to_string(r).c_str(), 1);
      int code = body(r);
      fflush(stdout);
      fflush(stderr);
      _exit(code);
    }
    out[r].pid = pid;
  }
  std::vector<pid_t> pids;
  for (auto& o : out) pids.push_back(o.pid);
  if (during) during(pids);
  int left = n;
  while (left > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (pid > 0) {
      for (auto& o : out) {
        if (o.pid != pid) continue;
        o.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        o.endSeconds = t;
        --left;
      }
      continue;
    }
    if (t > timeoutSec) {
      for (auto& o : out) kill(o.pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < n; ++r) {
    std::ifstream f(logs[r]);
    std::stringstream ss;
    ss << f.rdbuf();
    out[r].output = ss.str();
    unlink(logs[r].c_str());
  }
  return out;
}

// Runs a shell command, returning its exit status and combined output.
inline int runCommand(const std::string& cmd, std::string* output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t got;
  output->clear();
  while ((got = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, got);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace braid::test
