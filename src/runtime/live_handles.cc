#include "runtime/live_handles.h"

#include <unistd.h>

#include <atomic>
#include <unordered_set>

#include "core/logging.h"

namespace braid {
namespace {

std::mutex gRegistryMu;
std::unordered_set<const braidComm*>& comms() {
  static auto* set = new std::unordered_set<const braidComm*>();
  return *set;
}
std::unordered_set<const void*>& streams() {
  static auto* set = new std::unordered_set<const void*>();
  return *set;
}
std::unordered_set<const void*>& destroyedStreams() {  // their structs are kept (stream.h)
  static auto* set = new std::unordered_set<const void*>();
  return *set;
}

// isLiveComm's fast path: the comm this thread last found live, valid while no
// comm has been unregistered since (a generation bumped by every removal), so
// a call on the same comm skips the registry lock.
std::atomic<uint64_t> gRemovals{0};
struct LastLive {
  const braidComm* comm = nullptr;
  uint64_t at = 0;  // gRemovals when it was found live
};
thread_local LastLive tLive;  // one thread-local, reached once per check

}  // namespace

void registerComm(braidComm* comm) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  comms().insert(comm);
}

void unregisterComm(braidComm* comm) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  comms().erase(comm);
  gRemovals.fetch_add(1, std::memory_order_release);
}

bool isLiveComm(const braidComm* comm) {
  const uint64_t removals = gRemovals.load(std::memory_order_acquire);
  LastLive& last = tLive;
  if (comm != nullptr && comm == last.comm && removals == last.at) return true;
  std::lock_guard<std::mutex> lock(gRegistryMu);
  if (comms().count(comm) == 0) return false;
  last.comm = comm;
  last.at = gRemovals.load(std::memory_order_relaxed);
  return true;
}

bool acquireComm(braidComm* comm) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  if (comms().count(comm) == 0) return false;
  comm->activeCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void releaseComm(braidComm* comm) { comm->activeCalls.fetch_sub(1, std::memory_order_release); }

void waitForCalls(braidComm* comm) {
  while (comm->activeCalls.load(std::memory_order_acquire) > 0) usleep(100);
}

void forEachLiveComm(const std::function<void(const braidComm*)>& fn) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  for (const braidComm* c : comms()) fn(c);
}

bool isValidStream(braidStream_t stream) {
  if (stream == nullptr) return true;
  std::lock_guard<std::mutex> lock(gRegistryMu);
  return streams().count(stream) != 0;
}

void registerStream(braidStream_t stream) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  streams().insert(stream);
}

void unregisterStream(braidStream_t stream) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  streams().erase(stream);
  destroyedStreams().insert(stream);
}

bool isDestroyedStream(braidStream_t stream) {
  if (stream == nullptr) return false;
  std::lock_guard<std::mutex> lock(gRegistryMu);
  return destroyedStreams().count(stream) != 0;
}

}  // namespace braid
