// The in-flight dump: on BRAID_DUMP_SIGNAL (default SIGUSR1, when the process
// has not claimed it) every live communicator of this process prints its
// rank, what it last posted and completed, and the operation it is in, and
// writes its BRAID_TRACE file when it traces. The
// handler only writes a byte to a pipe; a thread made at the first init reads
// it and prints under the handle registry's lock, so a communicator cannot be
// freed mid-print.
#include "runtime/dump.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "core/env.h"
#include "core/logging.h"
#include "runtime/communicator.h"
#include "runtime/live_handles.h"
#include "runtime/trace_file.h"

namespace braid {
namespace {

int gDumpPipe[2] = {-1, -1};

void onDumpSignal(int) {
  const int saved = errno;
  const char byte = 1;
  (void)!write(gDumpPipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

int parseDumpSignal(const std::string& s) {
  if (s.empty()) return SIGUSR1;
  if (s == "0" || s == "off" || s == "none") return 0;
  const std::string name = s.rfind("SIG", 0) == 0 ? s.substr(3) : s;
  if (name == "USR1") return SIGUSR1;
  if (name == "USR2") return SIGUSR2;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  return end != s.c_str() && *end == '\0' && v > 0 && v < NSIG ? static_cast<int>(v) : -1;
}

std::string describeLiveComms() {
  std::string out;
  forEachLiveComm([&](const braidComm* c) {
    const Comm& k = *c->comm;
    char line[160];
    std::snprintf(line, sizeof(line), "comm %p: rank %d of %d on %d node(s); posted #%llu, "
                  "completed #%llu", static_cast<const void*>(c), k.rank(), k.nranks(), k.nodes(),
                  static_cast<unsigned long long>(k.postedSeq()),
                  static_cast<unsigned long long>(k.completedSeq()));
    out += line;
    const std::string current = k.currentOp();
    out += current.empty() ? "; idle" : "; in " + current;
    if (k.failed()) out += "; failed: " + k.asyncError().message();
    out += "\n";
  });
  return out.empty() ? "no live communicator\n" : out;
}

void writeLiveTraces() {
  forEachLiveComm([](const braidComm* c) {
    if (c->comm->trace() == nullptr) return;
    Status st = writeTraceFile(c, "signal");
    if (!st.isOk()) BRAID_WARN("%s", st.message().c_str());
  });
}

void installDumpSignal() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string spec = envString("BRAID_DUMP_SIGNAL");
    const int sig = parseDumpSignal(spec);
    if (sig < 0) {
      BRAID_WARN("BRAID_DUMP_SIGNAL='%s' is not a signal (SIGUSR1, USR2, a number, or 0); no dump",
                 spec.c_str());
      return;
    }
    if (sig == 0) return;
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    // Only a signal nobody handles: the default would have killed the process.
    if (spec.empty() && (old.sa_flags & SA_SIGINFO || old.sa_handler != SIG_DFL)) return;
    if (pipe2(gDumpPipe, O_CLOEXEC) != 0) return;
    std::thread([] {
      char byte;
      while (read(gDumpPipe[0], &byte, 1) == 1 || errno == EINTR) {
        const std::string text = describeLiveComms();
        std::fprintf(stderr, "[braid dump pid %d]\n%s", static_cast<int>(getpid()), text.c_str());
        std::fflush(stderr);
        writeLiveTraces();
      }
    }).detach();
    struct sigaction sa {};
    sa.sa_handler = onDumpSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
  });
}

}  // namespace braid
