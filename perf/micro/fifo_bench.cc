// Micro benchmark of one shm FIFO step between two processes, through the
// shm transport's Endpoint (transports/shm): the sender takes a slot, fills
// `bytes`, posts it; the receiver finds it, reads it and releases it. One
// iteration is a round trip (a step each way, the partner echoing what it
// got); one_way is half of it. Both sides poll without sleeping, as the
// executor's fast path does.
//
//   fifoStep/<bytes>/spin_cross_core   pinned to CPUs 0 and 1 (needs 2 CPUs)
//   fifoStep/<bytes>/yield_same_core   both on CPU 0, sched_yield between polls
//
// The endpoints are made by ShmTransport::connect over a socketpair, as
// between two ranks on one node. A post of 0 bytes tells the partner to exit.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "core/transport.h"
#include "transports/shm/shm_transport.h"

namespace braid {
namespace {

constexpr size_t kSliceBytes = size_t{128} << 10;  // BRAID_SHM_SLOT_BYTES' default
constexpr int kSlots = 8;

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

std::unique_ptr<Endpoint> connectShm(int fd, int selfRank, std::string* error) {
  PeerInfo self, peer;
  self.rank = selfRank;
  peer.rank = 1 - selfRank;
  self.pid = peer.pid = getpid();
  self.hostId = peer.hostId = "micro";
  ConnectOptions options{kSliceBytes, kSlots};
  auto ep = transport::shm::makeShmTransport()->connect(fd, self, peer, options, Deadline(10000));
  if (!ep.isOk()) {
    *error = ep.status().message();
    return nullptr;
  }
  return std::move(ep).value();
}

// The next filled slot, polling; its size in *bytes.
const void* receive(Endpoint* ep, size_t* bytes, bool yield) {
  const void* slot;
  while ((slot = ep->recvSlot(bytes)) == nullptr) {
    if (yield) sched_yield();
  }
  return slot;
}

void* freeSlot(Endpoint* ep, bool yield) {
  void* slot;
  while ((slot = ep->sendSlot()) == nullptr) {
    if (yield) sched_yield();
  }
  return slot;
}

// Copies a received slot out and the reply in, as a step of a collective would.
[[noreturn]] void echoPartner(int fd, int cpu, bool yield) {
  pinTo(cpu);
  std::string error;
  std::unique_ptr<Endpoint> ep = connectShm(fd, 1, &error);
  if (!ep) {
    std::fprintf(stderr, "fifoStep partner: %s\n", error.c_str());
    _exit(1);
  }
  auto buffer = std::make_unique<char[]>(kSliceBytes);
  for (;;) {
    size_t bytes = 0;
    const void* in = receive(ep.get(), &bytes, yield);
    std::memcpy(buffer.get(), in, bytes);
    ep->recvRelease();
    if (bytes == 0) _exit(0);
    std::memcpy(freeSlot(ep.get(), yield), buffer.get(), bytes);
    (void)ep->sendPost(bytes);
  }
}

void fifoStep(benchmark::State& state, int cpuSelf, int cpuPartner, bool yield) {
  size_t bytes = static_cast<size_t>(state.range(0));
  if (cpuPartner >= sysconf(_SC_NPROCESSORS_ONLN)) {
    state.SkipWithError("needs a second CPU");
    return;
  }
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    state.SkipWithError("socketpair failed");
    return;
  }
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    echoPartner(fds[1], cpuPartner, yield);
  }
  close(fds[1]);
  std::string error;
  std::unique_ptr<Endpoint> ep = child > 0 ? connectShm(fds[0], 0, &error) : nullptr;
  if (!ep) {
    if (child > 0) waitpid(child, nullptr, 0);
    state.SkipWithError(child < 0 ? "fork failed" : ("shm connect: " + error).c_str());
    return;
  }
  cpu_set_t saved;
  sched_getaffinity(0, sizeof(saved), &saved);
  pinTo(cpuSelf);
  auto buffer = std::make_unique<char[]>(kSliceBytes);
  std::memset(buffer.get(), 1, bytes);
  for (auto _ : state) {
    std::memcpy(freeSlot(ep.get(), yield), buffer.get(), bytes);
    (void)ep->sendPost(bytes);
    size_t got = 0;
    const void* in = receive(ep.get(), &got, yield);
    std::memcpy(buffer.get(), in, got);
    ep->recvRelease();
  }
  freeSlot(ep.get(), yield);
  (void)ep->sendPost(0);
  waitpid(child, nullptr, 0);
  sched_setaffinity(0, sizeof(saved), &saved);
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<int64_t>(bytes));
  // Hand-offs per second, inverted: seconds per one-way hand-off ("170n s").
  state.counters["one_way"] = benchmark::Counter(static_cast<double>(state.iterations()) * 2,
                                                 benchmark::Counter::kIsRate |
                                                     benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(fifoStep, spin_cross_core, 0, 1, false)
    ->Arg(8)
    ->Arg(64 << 10)
    ->Arg(128 << 10)
    ->UseRealTime();
BENCHMARK_CAPTURE(fifoStep, yield_same_core, 0, 0, true)->Arg(8)->Arg(64 << 10)->UseRealTime();

}  // namespace
}  // namespace braid
