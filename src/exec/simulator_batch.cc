// The simulator's batches: per-peer lanes that keep the schedule's order,
// the check that steps of one batch do not race on memory, and the words a
// deadlock report uses for what a batch waits on.
#include <algorithm>
#include <string>

#include "exec/simulator_internal.h"

namespace braid::sim {

// The steps of a batch run concurrently on a real executor, so none may write
// memory another reads or writes: sort the batch's accesses by address and
// compare each with the furthest-reaching earlier write (and earlier access).
// A step's src and dst are disjoint or equal (checkStep); equal ones count as
// one write.
Status Simulator::checkRaces(int r, size_t begin, size_t end) {
  if (end - begin < 2) return Status::ok();
  struct Access {
    const uint8_t* lo;
    const uint8_t* hi;
    bool write;
    size_t step;
    BufRef ref;
    uint64_t offset;
  };
  std::vector<Access> acc;
  for (size_t i = begin; i < end; ++i) {
    const Step& st = sched_[r].steps[i];
    if (st.count == 0) continue;
    const size_t bytes = st.count * es_;
    const uint8_t* d = needsDst(st.op) ? buffer(r, st.dst).data + st.dstOffset * es_ : nullptr;
    const uint8_t* s = needsSrc(st.op) ? buffer(r, st.src).data + st.srcOffset * es_ : nullptr;
    if (d != nullptr) acc.push_back({d, d + bytes, true, i, st.dst, st.dstOffset});
    if (s != nullptr && s != d) acc.push_back({s, s + bytes, false, i, st.src, st.srcOffset});
  }
  std::sort(acc.begin(), acc.end(), [](const Access& a, const Access& b) { return a.lo < b.lo; });
  const Access* anyFar = nullptr;
  const Access* writeFar = nullptr;
  auto name = [&](const Access& a) {
    const uint64_t c = sched_[r].steps[a.step].count;
    return std::string(a.write ? "writes " : "reads ") + bufName(a.ref) + " elements [" +
           std::to_string(a.offset) + ", " + std::to_string(a.offset + c) + ")";
  };
  for (const Access& a : acc) {
    const Access* other = a.write ? anyFar : writeFar;
    if (other != nullptr && other->hi > a.lo) {
      const Access& first = other->step < a.step ? *other : a;
      const Access& second = other->step < a.step ? a : *other;
      return invalidUsage("race in a batch: " + where(r, first.step) + " " + name(first) +
                          " and step " + std::to_string(second.step) + " " + name(second) +
                          ", but the steps of a batch (here " + std::to_string(begin) + "-" +
                          std::to_string(end - 1) + ") run concurrently");
    }
    if (anyFar == nullptr || a.hi > anyFar->hi) anyFar = &a;
    if (a.write && (writeFar == nullptr || a.hi > writeFar->hi)) writeFar = &a;
  }
  return Status::ok();
}

// Loads the rank's next batch that has steps to do; false when none is left.
bool Simulator::nextBatch(int r) {
  Batch& b = batch_[r];
  const std::vector<Step>& steps = sched_[r].steps;
  for (int p : b.peers) {
    for (Lane* lane : {&b.sendLanes[p], &b.recvLanes[p]}) {
      lane->steps.clear();  // keeps the capacity: no allocation per batch
      lane->head = 0;
    }
  }
  b.peers.clear();
  while (b.left == 0 && b.end < steps.size()) {
    b.begin = b.end;
    b.end = batchEnd(steps, b.begin);
    if (b.end - b.begin == 1) {  // a step on its own, the common case: no lanes
      b.left = steps[b.begin].count > 0 ? 1 : 0;
      continue;
    }
    for (size_t i = b.begin; i < b.end; ++i) {
      const Step& st = steps[i];
      if (st.count == 0) continue;  // done at once
      ++b.left;
      if (st.sendPeer < 0 && st.recvPeer < 0) b.local.push_back(i);
      auto queue = [&](std::vector<Lane>& lanes, int p) {
        if (b.sendLanes[p].steps.empty() && b.recvLanes[p].steps.empty()) b.peers.push_back(p);
        lanes[p].steps.push_back(i);
      };
      if (st.sendPeer >= 0) queue(b.sendLanes, st.sendPeer);
      if (st.recvPeer >= 0) queue(b.recvLanes, st.recvPeer);
    }
  }
  return b.left > 0;
}

bool Simulator::runnable(int r, size_t i) {
  const Batch& b = batch_[r];
  const Step& st = sched_[r].steps[i];
  if (st.sendPeer >= 0 && b.sendLanes[st.sendPeer].front() != i) return false;
  if (st.recvPeer >= 0 && b.recvLanes[st.recvPeer].front() != i) return false;
  return ready(r, st);
}

// Runs every step of the rank's batch that can run now. Only the rank's own
// steps change what it may run next (a step heading two lanes), so repeat
// until a pass over the lanes runs nothing.
Status Simulator::advance(int r, bool* progressed) {
  Batch& b = batch_[r];
  if (b.end - b.begin == 1) {
    if (!ready(r, sched_[r].steps[b.begin])) return Status::ok();
    b.left = 0;
    *progressed = true;
    return execute(r, b.begin);
  }
  for (size_t i : b.local) BRAID_TRY(execute(r, i));
  b.left -= b.local.size();
  *progressed = *progressed || !b.local.empty();
  b.local.clear();
  for (bool again = true; again && b.left > 0;) {
    again = false;
    for (int p : b.peers) {
      for (Lane* lane : {&b.recvLanes[p], &b.sendLanes[p]}) {
        while (!lane->empty() && runnable(r, lane->front())) {
          const Step& st = sched_[r].steps[lane->front()];
          BRAID_TRY(execute(r, lane->front()));
          if (st.sendPeer >= 0) ++b.sendLanes[st.sendPeer].head;
          if (st.recvPeer >= 0) ++b.recvLanes[st.recvPeer].head;
          --b.left;
          again = true;
          *progressed = true;
        }
      }
    }
  }
  return Status::ok();
}

// Why step i (heading at least one of its lanes) cannot run.
std::string Simulator::waitsFor(int r, size_t i) {
  const Batch& b = batch_[r];
  const bool alone = b.end - b.begin == 1;
  const Step& st = sched_[r].steps[i];
  std::string why;
  auto add = [&](const std::string& w) { why += (why.empty() ? "" : " and ") + w; };
  if (st.recvPeer >= 0) {
    const std::string peer = "rank " + std::to_string(st.recvPeer);
    const size_t head = alone ? i : b.recvLanes[st.recvPeer].front();
    if (head != i) add("step " + std::to_string(head) + " (an earlier receive from " + peer + ")");
    if (head == i && fifo(st.recvPeer, r).empty()) add("a message from " + peer);
  }
  if (st.sendPeer >= 0) {
    const std::string peer = "rank " + std::to_string(st.sendPeer);
    const size_t head = alone ? i : b.sendLanes[st.sendPeer].front();
    if (head != i) add("step " + std::to_string(head) + " (an earlier send to " + peer + ")");
    if (head == i && fifo(r, st.sendPeer).size() >= opts_.fifoMessages) {
      add("room to send to " + peer + " (FIFO full: " + std::to_string(opts_.fifoMessages) +
          " messages)");
    }
  }
  return why;
}

// The blocked rank's waiting steps: those heading a lane of its batch.
std::string Simulator::waiting(int r) {
  const Batch& b = batch_[r];
  if (b.end - b.begin == 1) return where(r, b.begin) + " waits for " + waitsFor(r, b.begin);
  std::vector<size_t> heads;
  for (int p : b.peers) {
    for (const Lane* lane : {&b.recvLanes[p], &b.sendLanes[p]}) {
      if (!lane->empty()) heads.push_back(lane->front());
    }
  }
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  constexpr size_t kShown = 16;
  std::string msg = "rank " + std::to_string(r) + " batch of steps " + std::to_string(b.begin) +
                    "-" + std::to_string(b.end - 1) + " (" + std::to_string(b.left) + " not done):";
  for (size_t j = 0; j < heads.size() && j < kShown; ++j) {
    msg += std::string(j == 0 ? " " : ", ") + stepName(r, heads[j]) + " waits for " +
           waitsFor(r, heads[j]);
  }
  if (heads.size() > kShown) msg += ", and " + std::to_string(heads.size() - kShown) + " more";
  return msg;
}

}  // namespace braid::sim
