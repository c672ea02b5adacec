// braidrun: starts N ranks of a Braid program on this machine. See helpText() in options.cc
// for what it does; supervisor.h for how.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "tools/braidrun/options.h"
#include "tools/braidrun/rank_env.h"
#include "tools/braidrun/signals.h"
#include "tools/braidrun/supervisor.h"

namespace braid::run {
namespace {

// A pipe created while fd 0, 1 or 2 is closed could take that number and then be clobbered by
// dup2() in the child; /dev/null in the gaps keeps the numbers taken.
void ensureStandardFdsOpen() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
  }
}

// braidrun holds two pipes per rank; 1024 ranks need more than the common soft limit of 1024
// open files. Raises the soft limit (never past the hard one) when it is too low.
void raiseOpenFileLimit(int num_ranks) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;  // then pipe2() will say what is wrong
  rlim_t needed = 2 * static_cast<rlim_t>(num_ranks) + 64;
  if (limit.rlim_cur >= needed) return;
  limit.rlim_cur = std::min(needed, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &limit);
}

Expected<JobEnvironment> makeJobEnvironment(const Options& options) {
  JobEnvironment job;
  job.world_size = options.num_ranks;
  job.extra_env = options.extra_env;
  Expected<std::string> secret = makeSecret();
  if (!secret.isOk()) return secret.status();
  job.secret = secret.value();
  if (!options.root.empty()) {
    job.root = options.root;
    return job;
  }
  Expected<std::string> root = pickLoopbackRoot();
  if (!root.isOk()) return root.status();
  job.root = root.value();
  return job;
}

int launchAndSupervise(const Options& options) {
  ensureStandardFdsOpen();
  raiseOpenFileLimit(options.num_ranks);
  Expected<JobEnvironment> job = makeJobEnvironment(options);
  if (!job.isOk()) {
    std::fprintf(stderr, "braidrun: %s\n", job.status().message().c_str());
    return kExitLaunchFailed;
  }
  Expected<int> signal_fd = installSignalPipe();
  if (!signal_fd.isOk()) {
    std::fprintf(stderr, "braidrun: %s\n", signal_fd.status().message().c_str());
    return kExitLaunchFailed;
  }
  Supervisor supervisor(options, signal_fd.value());
  Status launched = supervisor.launch(job.value());
  if (!launched.isOk()) {
    std::fprintf(stderr, "braidrun: %s\n", launched.message().c_str());
    supervisor.stopAfterLaunchFailure();
  }
  return supervisor.run();
}

}  // namespace
}  // namespace braid::run

int main(int argc, char** argv) {
  using namespace braid::run;
  Expected<CommandLine> parsed = parseCommandLine(argc, argv);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "braidrun: %s\n%s", parsed.status().message().c_str(),
                 usageText().c_str());
    return kExitUsage;
  }
  if (parsed.value().show_help) {
    std::fputs(helpText().c_str(), stdout);
    return 0;
  }
  return launchAndSupervise(parsed.value().options);
}
