// orderLanes (algorithms/file/msccl_xml_internal.h): MSCCL's concurrent thread blocks as
// one step list per rank, in rounds.
//
// Every rank walks its lanes once per round and runs each lane's next step when what it
// waits for ran in an earlier round: its dependency, and for a receive the message at the
// head of the stream from its peer, which must come from the same channel (a stream per
// pair of ranks keeps one order; MSCCL's channels are independent). A rank's steps of one
// round depend on nothing else of that round, so they form one batch. A round in which no
// lane moves, with steps left, is a program no order completes: refused, naming why.
//
// Where MSCCL gives every channel its own buffers, Braid's stream between two ranks holds
// kStreamDepth messages, so a step sends only where the messages on its stream at the
// round's start plus those the rank sends in the round fit: then the ranks furthest behind
// can always finish their round, and no run deadlocks. A step that only sends leaves one
// message of room, which the fused steps (receive, then send on) of a ring need to move:
// a second thread block on the same stream waits until the first has drained it.
#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "algorithms/file/msccl_xml_internal.h"

namespace braid::algo::msccl {
namespace {

// Messages a stream holds: the FIFO depth the simulator's proof checks
// (SimOptions::fifoMessages).
constexpr size_t kStreamDepth = 2;

struct Message {
  int lane = 0;
  int step = 0;
  int chan = 0;
  int round = 0;
  uint64_t chunks = 0;
  int64_t place = -1;  // of its data within a block (Places), -1: unknown
};

class Orderer {
 public:
  Orderer(const std::vector<Rank>& ranks, uint64_t chunksPerBlock)
      : ranks_(ranks),
        places_(static_cast<int>(ranks.size()), chunksPerBlock),
        n_(static_cast<int>(ranks.size())),
        streams_(size_t(n_) * n_),
        atStart_(streams_.size()),
        sent_(streams_.size()) {
    for (const Rank& r : ranks_) {
      next_.emplace_back(r.lanes.size(), 0);
      ranAt_.emplace_back();
      for (const Lane& l : r.lanes) {
        ranAt_.back().emplace_back(l.steps.size(), -1);
        left_ += l.steps.size();
      }
    }
    out_.resize(ranks_.size());
    origin_.resize(ranks_.size());
  }

  Expected<std::vector<std::vector<Step>>> run(const std::vector<Step>& prologue,
                                               uint64_t* scratchChunks) {
    for (int r = 0; r < n_; ++r) {
      for (const Step& st : prologue) {
        BRAID_TRY(places_.place(r, st, -1).status());
        out_[r].push_back(st);
        origin_[r].push_back("the copy of the input the program writes");
      }
    }
    for (int round = 0; left_ > 0; ++round) {
      bool moved = false;
      for (size_t k = 0; k < streams_.size(); ++k) {
        atStart_[k] = streams_[k].size();
        sent_[k] = 0;
      }
      for (int r = 0; r < n_; ++r) {
        const size_t before = out_[r].size();
        for (size_t l = 0; l < ranks_[r].lanes.size(); ++l) {
          BRAID_ASSIGN_OR_RETURN(bool ran, tryStep(r, static_cast<int>(l), round));
          moved = moved || ran;
        }
        if (out_[r].size() > before) out_[r].back().batchWithNext = false;
      }
      if (!moved) return stuck(round);
    }
    for (int a = 0; a < n_; ++a) {
      for (int b = 0; b < n_; ++b) {
        const std::deque<Message>& q = stream(a, b);
        if (q.empty()) continue;
        return invalidArgument(where(a, laneId(a, q.front().lane), q.front().step) +
                               ": sends to gpu " + std::to_string(b) + " a message (one of " +
                               std::to_string(q.size()) + ") that no step of gpu " +
                               std::to_string(b) + " receives");
      }
    }
    *scratchChunks = 0;
    for (int r = 0; r < n_; ++r) {
      BRAID_ASSIGN_OR_RETURN(uint64_t need, places_.remap(r, &out_[r], origin_[r]));
      *scratchChunks = std::max(*scratchChunks, need);
    }
    return out_;
  }

 private:
  std::deque<Message>& stream(int from, int to) { return streams_[size_t(from) * n_ + to]; }
  int laneId(int r, int lane) const { return ranks_[r].lanes[lane].id; }

  bool depRan(int r, const LaneStep& s, int round) const {
    if (s.depLane < 0) return true;
    const int at = ranAt_[r][s.depLane][s.depStep];
    return at >= 0 && at < round;
  }

  // Runs lane l's next step on rank r in `round` where it can; fails where its message
  // holds another number of chunks than it receives.
  Expected<bool> tryStep(int r, int l, int round) {
    const Lane& lane = ranks_[r].lanes[l];
    const int i = next_[r][l];
    if (i == static_cast<int>(lane.steps.size())) return false;
    const LaneStep& s = lane.steps[i];
    if (!depRan(r, s, round)) return false;
    const bool recv = !s.nop && needsRecv(s.step.op);
    const bool send = !s.nop && needsSend(s.step.op);
    if (recv) {
      std::deque<Message>& q = stream(lane.recv, r);
      if (q.empty() || q.front().round >= round || q.front().chan != lane.chan) return false;
      if (q.front().chunks != s.step.count) {
        return invalidArgument("line " + std::to_string(s.line) + ": " + where(r, lane.id, i) +
                               ": receives " + std::to_string(s.step.count) +
                               " chunks, but the message it meets (" +
                               where(lane.recv, laneId(lane.recv, q.front().lane), q.front().step) +
                               ") holds " + std::to_string(q.front().chunks));
      }
    }
    const size_t k = send ? size_t(r) * n_ + lane.send : 0;
    if (send && atStart_[k] + sent_[k] + 1 > (recv ? kStreamDepth : kStreamDepth - 1)) {
      return false;
    }
    const std::string self = "line " + std::to_string(s.line) + ": " + where(r, lane.id, i);
    int64_t place = -1;
    if (!s.nop) {
      const int64_t got = recv ? stream(lane.recv, r).front().place : -1;
      Expected<int64_t> p = places_.place(r, s.step, got);
      if (!p.isOk()) return p.status().withContext(self + ": ");
      place = p.value();
    }
    if (send) {
      ++sent_[k];
      stream(r, lane.send).push_back(Message{l, i, lane.chan, round, s.step.count, place});
    }
    if (recv) stream(lane.recv, r).pop_front();
    ranAt_[r][l][i] = round;
    ++next_[r][l];
    --left_;
    if (!s.nop) {
      out_[r].push_back(s.step);
      out_[r].back().batchWithNext = true;
      origin_[r].push_back(self);
    }
    return true;
  }

  // Why lane l of rank r cannot run its next step.
  std::string why(int r, int l) {
    const Lane& lane = ranks_[r].lanes[l];
    const int i = next_[r][l];
    const LaneStep& s = lane.steps[i];
    const std::string self = where(r, lane.id, i) + " (" + s.type + ")";
    if (s.depLane >= 0 && ranAt_[r][s.depLane][s.depStep] < 0) {
      return self + " waits for " + where(r, laneId(r, s.depLane), s.depStep);
    }
    if (!s.nop && needsRecv(s.step.op)) {
      const std::deque<Message>& q = stream(lane.recv, r);
      const std::string from = "gpu " + std::to_string(lane.recv);
      if (q.empty()) {
        return self + " waits for a message from " + from + " on channel " +
               std::to_string(lane.chan) + " that is never sent before it";
      }
      if (q.front().chan != lane.chan) {
        return self + " receives on channel " + std::to_string(lane.chan) +
               ", but the next message from " + from + " is " +
               where(lane.recv, laneId(lane.recv, q.front().lane), q.front().step) +
               "'s on channel " + std::to_string(q.front().chan) +
               " (Braid keeps one order of messages per pair of ranks, MSCCL one per channel)";
      }
    }
    return self + " waits for room to send to gpu " + std::to_string(lane.send) + ", whose " +
           std::to_string(stream(r, lane.send).size()) + " messages from gpu " + std::to_string(r) +
           " are never received";
  }

  Status stuck(int round) {
    std::string msg =
        "no order of the thread blocks' steps completes (round " + std::to_string(round) + "): ";
    int named = 0;
    for (int r = 0; r < n_ && named < 3; ++r) {
      for (size_t l = 0; l < ranks_[r].lanes.size() && named < 3; ++l) {
        if (next_[r][l] == static_cast<int>(ranks_[r].lanes[l].steps.size())) continue;
        msg += std::string(named++ ? "; " : "") + why(r, static_cast<int>(l));
      }
    }
    return invalidArgument(msg);
  }

  const std::vector<Rank>& ranks_;
  Places places_;
  const int n_;
  std::vector<std::deque<Message>> streams_;          // [from * n + to]
  std::vector<size_t> atStart_;                       // messages on each stream as the round starts
  std::vector<size_t> sent_;                          // messages sent on it in the round
  std::vector<std::vector<int>> next_;                // [rank][lane]: its next step
  std::vector<std::vector<std::vector<int>>> ranAt_;  // [rank][lane][step]: round, or -1
  std::vector<std::vector<Step>> out_;
  std::vector<std::vector<std::string>> origin_;  // [rank][step]: the file's step, named
  size_t left_ = 0;
};

}  // namespace

std::string where(int gpu, int tb, int step) {
  std::string s = "gpu " + std::to_string(gpu) + ", tb " + std::to_string(tb);
  if (step >= 0) s += ", step " + std::to_string(step);
  return s;
}

Expected<std::vector<std::vector<Step>>> orderLanes(const std::vector<Rank>& ranks,
                                                    uint64_t chunksPerBlock,
                                                    const std::vector<Step>& prologue,
                                                    uint64_t* scratchChunks) {
  return Orderer(ranks, chunksPerBlock).run(prologue, scratchChunks);
}

}  // namespace braid::algo::msccl
