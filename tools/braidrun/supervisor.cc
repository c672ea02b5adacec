#include "tools/braidrun/supervisor.h"

#include <dirent.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/shm_segment_name.h"
#include "tools/braidrun/rank_process.h"
#include "tools/braidrun/signals.h"

namespace braid::run {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTermToKill{2000};
// After the last rank exits, how long to wait for EOF on its pipes. EOF comes at once unless
// something the rank started in the background still holds them; braidrun does not wait
// for such leftovers.
constexpr milliseconds kDrainAfterExit{1000};
constexpr int kRanksListed = 16;

std::string describeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  int sig = WTERMSIG(wait_status);
  std::string text = "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  if (WCOREDUMP(wait_status)) text += " (core dumped)";
  return text;
}

int exitCodeFor(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

std::string formatMs(milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

}  // namespace

Supervisor::Supervisor(Options options, int signal_fd)
    : options_(std::move(options)), signal_fd_(signal_fd) {}

Status Supervisor::launch(const JobEnvironment& job) {
  ranks_.reserve(static_cast<size_t>(options_.num_ranks));
  std::vector<int> cpus;
  if (options_.bind != Bind::kNone) {
    Expected<std::vector<int>> allowed = allowedCpus();
    if (allowed.isOk()) {
      cpus = std::move(allowed.value());
    } else if (options_.bind == Bind::kCore) {
      return allowed.status();
    }
    // Auto: fewer ranks than CPUs stay free (threads of their own may use the spare ones).
    if (options_.bind == Bind::kAuto && static_cast<size_t>(options_.num_ranks) < cpus.size()) {
      cpus.clear();
    }
  }
  for (int r = 0; r < options_.num_ranks; ++r) {
    std::vector<std::string> env = rankEnvironment(job, r);
    int cpu = cpus.empty() ? -1 : cpus[static_cast<size_t>(r) % cpus.size()];
    ScopedSignalBlock blocked;
    Expected<SpawnedRank> spawned = spawnRank(r, options_.command, env, cpu, blocked);
    if (!spawned.isOk()) return spawned.status();
    std::string prefix = options_.prefix_output ? "[" + std::to_string(r) + "] " : "";
    std::string name = "rank " + std::to_string(r);
    ranks_.push_back(Rank{
        r, spawned.value().pid, true,
        LineForwarder(std::move(spawned.value().stdout_fd), &stdout_, prefix, name + "'s stdout"),
        LineForwarder(std::move(spawned.value().stderr_fd), &stderr_, prefix, name + "'s stderr")});
    ++running_;
  }
  if (options_.timeout) timeout_deadline_ = Clock::now() + *options_.timeout;
  return Status::ok();
}

void Supervisor::stopAfterLaunchFailure() {
  exit_code_ = kExitLaunchFailed;
  if (running_ > 0) stopRunning(SIGTERM, "could not start every rank");
}

int Supervisor::run() {
  while (!done()) {
    pollOnce();
    forwardSignals();
    reapChildren();
    checkDeadlines();
    finishDraining();
  }
  return exit_code_.value_or(0);
}

void Supervisor::pollOnce() {
  std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
  std::vector<LineForwarder*> forwarders;
  for (Rank& rank : ranks_) {
    for (LineForwarder* forwarder : {&rank.out, &rank.err}) {
      if (!forwarder->isOpen()) continue;
      fds.push_back({forwarder->fd(), POLLIN, 0});
      forwarders.push_back(forwarder);
    }
  }
  int ready = poll(fds.data(), fds.size(), pollTimeoutMs());
  if (ready < 0) {
    // EINTR is the normal wake-up for a signal; anything else would repeat forever.
    if (errno != EINTR) note(std::string("poll() failed: ") + std::strerror(errno));
    return;
  }
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents != 0) forwarders[i - 1]->forwardAvailable();  // POLLHUP means EOF
  }
}

int Supervisor::pollTimeoutMs() const {
  std::optional<Clock::time_point> next;
  for (const auto& deadline : {phase_deadline_, timeout_deadline_, drain_deadline_}) {
    if (deadline && (!next || *deadline < *next)) next = deadline;
  }
  if (!next) return -1;
  auto left = std::chrono::ceil<milliseconds>(*next - Clock::now());
  // A --timeout of days does not fit poll()'s int; waking once a minute costs nothing.
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, int64_t{60'000}));
}

void Supervisor::forwardSignals() {
  for (int sig : readPendingSignals(signal_fd_)) {
    if (sig == SIGCHLD) continue;  // reapChildren() runs on every turn anyway
    for (const Rank& rank : ranks_) {
      if (rank.running) kill(rank.pid, sig);
    }
  }
}

void Supervisor::reapChildren() {
  for (;;) {
    int wait_status = 0;
    pid_t pid = waitpid(-1, &wait_status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;  // 0: none has exited; ECHILD: none left
    auto it = std::find_if(ranks_.begin(), ranks_.end(),
                           [pid](const Rank& rank) { return rank.pid == pid; });
    if (it != ranks_.end()) onRankExit(*it, wait_status);
  }
}

// Shared-memory segments are named /braid-<creator pid>-<pid namespace>-<random>
// (core/shm_segment_name.h; the ranks share braidrun's namespace). FIFOs are
// unlinked as soon as the peer maps them, so a rank killed inside that window leaves
// one; so does one killed holding a braidMemAlloc or registered buffer. Returns how many
// of `pid`'s segments were removed.
int removeSegmentsOf(pid_t pid) {
  const std::string prefix = shmSegmentPrefix(pid);
  int removed = 0;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* e = readdir(dir)) {
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
      removed += unlink(("/dev/shm/" + std::string(e->d_name)).c_str()) == 0 ? 1 : 0;
    }
    closedir(dir);
  }
  return removed;
}

void Supervisor::onRankExit(Rank& rank, int wait_status) {
  rank.running = false;
  if (int n = removeSegmentsOf(rank.pid); n > 0) {
    note("removed " + std::to_string(n) + " shared-memory segment(s) rank " +
         std::to_string(rank.rank) + " left in /dev/shm");
  }
  if (--running_ == 0) {  // nobody left to stop: only the output remains
    phase_deadline_.reset();
    timeout_deadline_.reset();
    drain_deadline_ = Clock::now() + kDrainAfterExit;
  }
  bool failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
  // Once braidrun is stopping the ranks, how they die is its own doing, not news.
  if (!failed || phase_ == Phase::kTerminating || phase_ == Phase::kKilling) return;
  note("rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) + ") " +
       describeExit(wait_status));
  if (phase_ != Phase::kRunning) return;  // not the first failure
  exit_code_ = exitCodeFor(wait_status);
  failure_ = "rank " + std::to_string(rank.rank) + " failed";
  phase_ = Phase::kGrace;
  if (running_ == 0) return;
  phase_deadline_ = Clock::now() + options_.grace;
  if (options_.grace.count() > 0) {
    note("giving " + runningRanks() + " up to " + formatMs(options_.grace) +
         " (--grace-ms) to finish on their own before stopping them");
  }
}

void Supervisor::checkDeadlines() {
  Clock::time_point now = Clock::now();
  if (timeout_deadline_ && now >= *timeout_deadline_) {
    timeout_deadline_.reset();
    if (running_ > 0 && (phase_ == Phase::kRunning || phase_ == Phase::kGrace)) {
      if (!exit_code_) exit_code_ = kExitTimeout;
      stopRunning(SIGTERM, "timed out after " + formatMs(*options_.timeout) + " (--timeout)");
    }
  }
  if (!phase_deadline_ || now < *phase_deadline_ || running_ == 0) return;
  if (phase_ == Phase::kGrace) {
    stopRunning(SIGTERM, failure_ + " " + formatMs(options_.grace) + " ago (--grace-ms)");
  } else if (phase_ == Phase::kTerminating) {
    stopRunning(SIGKILL, "SIGTERM was sent " + formatMs(kTermToKill) + " ago");
  }
}

// SIGTERM starts the wait for SIGKILL; SIGKILL is the end of the road.
void Supervisor::stopRunning(int sig, const std::string& reason) {
  note(reason + "; sending " + (sig == SIGKILL ? "SIGKILL" : "SIGTERM") + " to " + runningRanks());
  for (const Rank& rank : ranks_) {
    if (rank.running && kill(rank.pid, sig) != 0 && errno != ESRCH) {
      note("kill(rank " + std::to_string(rank.rank) + ", pid " + std::to_string(rank.pid) +
           ") failed: " + std::strerror(errno));
    }
  }
  phase_ = sig == SIGKILL ? Phase::kKilling : Phase::kTerminating;
  if (sig == SIGKILL) {
    phase_deadline_.reset();
  } else {
    phase_deadline_ = Clock::now() + kTermToKill;
  }
}

// Closes the pipes that stay open kDrainAfterExit after the last rank exited.
void Supervisor::finishDraining() {
  if (!drain_deadline_ || Clock::now() < *drain_deadline_) return;
  for (Rank& rank : ranks_) {
    for (LineForwarder* forwarder : {&rank.out, &rank.err}) {
      if (!forwarder->isOpen()) continue;
      forwarder->forwardAvailable();
      if (!forwarder->isOpen()) continue;
      forwarder->close();
      note("rank " + std::to_string(rank.rank) + " exited but its " +
           (forwarder == &rank.out ? "stdout" : "stderr") +
           " is still open (a background process it started?); not waiting for it");
    }
  }
}

bool Supervisor::done() const {
  if (running_ > 0) return false;
  return std::none_of(ranks_.begin(), ranks_.end(),
                      [](const Rank& rank) { return rank.out.isOpen() || rank.err.isOpen(); });
}

std::string Supervisor::runningRanks() const {
  std::string list;
  int listed = 0;
  for (const Rank& rank : ranks_) {
    if (!rank.running) continue;
    if (listed == kRanksListed) {  // a thousand rank numbers would help no one
      list += " and " + std::to_string(running_ - listed) + " more";
      break;
    }
    if (listed++ == 0) list = running_ == 1 ? "rank " : "ranks ";
    list += (listed == 1 ? "" : ", ") + std::to_string(rank.rank);
  }
  return list;
}

void Supervisor::note(const std::string& message) { stderr_.write("braidrun: " + message + "\n"); }

}  // namespace braid::run
