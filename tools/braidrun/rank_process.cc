#include "tools/braidrun/rank_process.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>

namespace braid::run {
namespace {

constexpr int kExitNotFound = 127;
constexpr int kExitNotExecutable = 126;

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

// A pipe for a rank's stdout or stderr; braidrun's end is non-blocking for poll().
Expected<Pipe> makeOutputPipe(const std::string& what) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return systemError("pipe2() for " + what + " failed (too many ranks for 'ulimit -n'?)");
  }
  Pipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
  if (fcntl(pipe.read_end.get(), F_SETFL, O_NONBLOCK) != 0) {
    return systemError("fcntl(O_NONBLOCK) on the pipe for " + what + " failed");
  }
  return pipe;
}

// Everything the child needs, prepared before fork() so that the child only makes system
// calls between fork() and exec().
struct ChildPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  int stdin_fd = -1;  // -1: keep braidrun's stdin
  int stdout_fd = -1;
  int stderr_fd = -1;
  pid_t parent = -1;
  std::string exec_error;  // "braidrun: rank 3: cannot execute 'cmd': "
  int cpu = -1;            // >= 0: the one CPU the rank may run on
};

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

void writeAll(int fd, const char* text) {
  size_t left = strlen(text);
  while (left > 0) {
    ssize_t n = write(fd, text, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

[[noreturn]] void runChild(const ChildPlan& plan, const ScopedSignalBlock& signals) {
  signals.restoreInChild();
  // If braidrun dies, even by SIGKILL, the rank goes with it instead of running orphaned.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != plan.parent) _exit(kExitNotExecutable);  // braidrun died before prctl()
  if ((plan.stdin_fd >= 0 && dup2(plan.stdin_fd, STDIN_FILENO) < 0) ||
      dup2(plan.stdout_fd, STDOUT_FILENO) < 0 || dup2(plan.stderr_fd, STDERR_FILENO) < 0) {
    int err = errno;
    writeAll(STDERR_FILENO, "braidrun: dup2() of a rank's stdin/stdout/stderr failed: ");
    writeAll(STDERR_FILENO, strerror(err));
    writeAll(STDERR_FILENO, "\n");
    _exit(kExitNotExecutable);
  }
  if (plan.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(plan.cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      int err = errno;
      writeAll(STDERR_FILENO, "braidrun: --bind core: sched_setaffinity() failed: ");
      writeAll(STDERR_FILENO, strerror(err));
      writeAll(STDERR_FILENO, "\n");
      _exit(kExitNotExecutable);
    }
  }
  execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
  int err = errno;
  writeAll(STDERR_FILENO, plan.exec_error.c_str());
  writeAll(STDERR_FILENO, strerror(err));
  writeAll(STDERR_FILENO, err == ENOENT ? " (check the command name and PATH)\n" : "\n");
  _exit(err == ENOENT ? kExitNotFound : kExitNotExecutable);
}

}  // namespace

Expected<SpawnedRank> spawnRank(int rank, const std::vector<std::string>& command,
                                const std::vector<std::string>& env, int cpu,
                                const ScopedSignalBlock& signals) {
  std::string name = "rank " + std::to_string(rank);
  Expected<Pipe> out = makeOutputPipe(name + "'s stdout");
  if (!out.isOk()) return out.status();
  Expected<Pipe> err = makeOutputPipe(name + "'s stderr");
  if (!err.isOk()) return err.status();
  UniqueFd dev_null;
  if (rank != 0) {
    dev_null = UniqueFd(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!dev_null.valid()) return systemError("open(/dev/null) for " + name + "'s stdin failed");
  }
  ChildPlan plan{cStrings(command),
                 cStrings(env),
                 dev_null.get(),
                 out.value().write_end.get(),
                 err.value().write_end.get(),
                 getpid(),
                 "braidrun: " + name + ": cannot execute '" + command[0] + "': ",
                 cpu};
  pid_t pid = fork();
  if (pid < 0) return systemError("fork() for " + name + " failed (too many processes?)");
  if (pid == 0) runChild(plan, signals);
  return SpawnedRank{pid, std::move(out.value().read_end), std::move(err.value().read_end)};
}

Expected<std::vector<int>> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return systemError("sched_getaffinity() for --bind core failed");
  }
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  if (cpus.empty()) return Status::error("--bind core: braidrun may run on no CPU");
  return cpus;
}

}  // namespace braid::run
