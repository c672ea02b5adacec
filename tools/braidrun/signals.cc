#include "tools/braidrun/signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace braid::run {
namespace {

int g_signal_pipe_write_fd = -1;
sigset_t g_caught;                    // signals braidrun installed onSignal for
struct sigaction g_original_sigpipe;  // restored in ranks, which must not inherit SIG_IGN

extern "C" void onSignal(int sig) {
  int saved_errno = errno;
  auto byte = static_cast<unsigned char>(sig);
  // A full pipe drops the byte: the loop is awake and busy anyway, and it reaps children on
  // every turn rather than trusting SIGCHLD bytes.
  [[maybe_unused]] ssize_t ignored = write(g_signal_pipe_write_fd, &byte, 1);
  errno = saved_errno;
}

sigset_t handledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  return set;
}

bool isIgnored(int sig) {
  struct sigaction current {};
  return sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

Status setHandler(int sig, void (*handler)(int), struct sigaction* previous = nullptr) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = (sig == SIGCHLD) ? SA_RESTART | SA_NOCLDSTOP : SA_RESTART;
  if (sigaction(sig, &action, previous) != 0) {
    return systemError("sigaction(" + std::string(strsignal(sig)) + ") failed");
  }
  return Status::ok();
}

}  // namespace

Expected<int> installSignalPipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return systemError("pipe2() for signals failed");
  g_signal_pipe_write_fd = fds[1];
  sigemptyset(&g_caught);
  for (int sig : kForwardedSignals) {
    // Like a shell's background job (or nohup): a signal ignored by whoever started braidrun
    // stays ignored, in braidrun and in the ranks.
    if (isIgnored(sig)) continue;
    Status installed = setHandler(sig, onSignal);
    if (!installed.isOk()) return installed;
    sigaddset(&g_caught, sig);
  }
  Status installed = setHandler(SIGCHLD, onSignal);
  if (!installed.isOk()) return installed;
  sigaddset(&g_caught, SIGCHLD);
  installed = setHandler(SIGPIPE, SIG_IGN, &g_original_sigpipe);
  if (!installed.isOk()) return installed;
  return fds[0];
}

std::vector<int> readPendingSignals(int signal_fd) {
  std::vector<int> signals;
  unsigned char buffer[64];
  for (;;) {
    ssize_t n = read(signal_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: nothing more; the write end never closes
    signals.insert(signals.end(), buffer, buffer + n);
  }
  return signals;
}

ScopedSignalBlock::ScopedSignalBlock() {
  sigset_t set = handledSignals();
  sigprocmask(SIG_BLOCK, &set, &original_mask_);
}

ScopedSignalBlock::~ScopedSignalBlock() { sigprocmask(SIG_SETMASK, &original_mask_, nullptr); }

void ScopedSignalBlock::restoreInChild() const {
  // exec() would reset caught signals itself; doing it now means a signal that arrives
  // before exec() cannot run onSignal in the child.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&g_caught, sig) == 1) signal(sig, SIG_DFL);
  }
  sigaction(SIGPIPE, &g_original_sigpipe, nullptr);
  sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
}

}  // namespace braid::run
