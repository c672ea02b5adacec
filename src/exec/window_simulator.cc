#include "exec/window_simulator.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "exec/window_simulator_internal.h"

namespace braid {
namespace wsim {
namespace {

bool isUser(BufRef b) {
  return b == BufRef::kInput || b == BufRef::kOutput || b == BufRef::kScratch;
}
bool isArea(BufRef b) { return b == BufRef::kWindowIn || b == BufRef::kWindowOut; }
bool isDest(BufRef b) { return b == BufRef::kOutput || b == BufRef::kScratch; }
bool overlaps(const Span& a, const Span& b, uint64_t bytes) {
  return a.data < b.data + bytes && b.data < a.data + bytes;
}

// What is wrong with step `st` of rank r (n ranks) as a window step, or "".
std::string stepProblem(const Step& st, int r, int n) {
  if (st.batchWithNext || st.sendPeer != -1) return "has FIFO fields (sendPeer, batchWithNext)";
  switch (st.op) {
    case OpKind::kBeginRound:
    case OpKind::kSignal:
      return st.recvPeer == -1 ? "" : "names a peer it has no use for";
    case OpKind::kWait:
      return st.recvPeer >= -1 && st.recvPeer < n && st.recvPeer != r
                 ? ""
                 : "waits for rank " + std::to_string(st.recvPeer) + ", not another rank of " +
                       std::to_string(n);
    case OpKind::kPut:
      return isUser(st.src) && isArea(st.dst) ? "" : "puts from a non-buffer or into a non-area";
    case OpKind::kReducePeers:
    case OpKind::kCopyPeer: {
      const bool peerOk =
          st.op == OpKind::kReducePeers ? st.recvPeer == -1 : st.recvPeer >= 0 && st.recvPeer < n;
      if (!peerOk)
        return "has peer " + std::to_string(st.recvPeer) + " (of " + std::to_string(n) + ")";
      return isArea(st.src) && isDest(st.dst) ? "" : "reads a non-area or writes a non-output";
    }
    case OpKind::kCopy:
      return isUser(st.src) && isDest(st.dst) ? "" : "copies from or into a non-buffer";
    default:
      return "is not a window step or a local copy";
  }
}

}  // namespace

std::string WindowSimulator::at(int r) const {
  const RankState& s = ranks_[r];
  const std::vector<Step>& steps = (*calls_[s.call].schedules)[r].steps;
  std::string t = "rank " + std::to_string(r) + " call " + std::to_string(s.call) + " step " +
                  std::to_string(s.step);
  if (s.step < steps.size()) {
    const Step& st = steps[s.step];
    t += std::string(" (") + algo::opKindName(st.op) + ", " + std::to_string(st.count) +
         " elements, round " + std::to_string(s.round) + ")";
  }
  return t;
}

Status WindowSimulator::checkSchedule(size_t c, int r) {
  const std::vector<Step>& steps = (*calls_[c].schedules)[r].steps;
  bool begun = false, ready = true;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    auto bad = [&](const std::string& why) {
      return invalidUsage("malformed step: rank " + std::to_string(r) + " call " +
                          std::to_string(c) + " step " + std::to_string(i) + " (" +
                          algo::opKindName(st.op) + "): " + why);
    };
    std::string why = stepProblem(st, r, n_);
    if (!why.empty()) return bad(why);
    if (st.op == OpKind::kBeginRound) {
      if (!ready) return bad("the round before raises no kReady");
      begun = true;
      ready = false;
      continue;
    }
    if (st.op != OpKind::kCopy && !begun) return bad("comes before the call's first kBeginRound");
    if (st.op == OpKind::kSignal && st.flag == WinFlag::kReady) ready = true;
  }
  if (!ready) {
    return invalidUsage("malformed schedule: rank " + std::to_string(r) + " call " +
                        std::to_string(c) + ": its last round raises no kReady");
  }
  return Status::ok();
}

// Ranks number rounds alike: every rank's schedule of a call has as many.
Status WindowSimulator::checkRounds(size_t c) {
  auto rounds = [&](int r) {
    const std::vector<Step>& steps = (*calls_[c].schedules)[r].steps;
    return std::count_if(steps.begin(), steps.end(),
                         [](const Step& st) { return st.op == OpKind::kBeginRound; });
  };
  for (int r = 1; r < n_; ++r) {
    if (rounds(r) == rounds(0)) continue;
    return invalidUsage("leftovers: in call " + std::to_string(c) + " rank 0 runs " +
                        std::to_string(rounds(0)) + " rounds, rank " + std::to_string(r) +
                        " runs " + std::to_string(rounds(r)));
  }
  return Status::ok();
}

Status WindowSimulator::checkArgs() {
  if (opts_.windowBytes == 0) return invalidArgument("simulateWindows: windowBytes must be > 0");
  n_ = calls_.empty() ? 0 : static_cast<int>(calls_[0].schedules->size());
  const auto bad = [](const std::string& why) {
    return invalidArgument("simulateWindows: " + why);
  };
  if (!opts_.lendInput.empty() && opts_.lendInput.size() != size_t(n_))
    return bad("lendInput size");
  if (!opts_.lendOutput.empty() && opts_.lendOutput.size() != size_t(n_))
    return bad("lendOutput size");
  for (size_t c = 0; c < calls_.size(); ++c) {
    const WindowSimCall& call = calls_[c];
    if (call.schedules == nullptr || call.ranks == nullptr ||
        call.schedules->size() != size_t(n_) || call.ranks->size() != size_t(n_)) {
      return bad("call " + std::to_string(c) + " has not one schedule and buffers per rank");
    }
    if (elemBytes(call) == 0 || static_cast<int>(call.op) < 0 || call.op >= braidNumOps) {
      return bad("invalid datatype or op");
    }
    lendIn_.emplace_back(n_);
    lendOut_.emplace_back(n_);
    for (int r = 0; r < n_; ++r) {
      const algo::Schedule& s = (*call.schedules)[r];
      if (s.rank != r || s.nranks != n_ || !s.windowed) {
        return invalidUsage("malformed schedule: call " + std::to_string(c) + " schedules[" +
                            std::to_string(r) + "] says rank " + std::to_string(s.rank) + " of " +
                            std::to_string(s.nranks) + (s.windowed ? "" : ", not windowed") +
                            "; expected a window schedule of rank " + std::to_string(r) + " of " +
                            std::to_string(n_));
      }
      lendIn_[c][r] = s.lendsInput && !opts_.lendInput.empty() && opts_.lendInput[r];
      lendOut_[c][r] = s.lendsOutput && !opts_.lendOutput.empty() && opts_.lendOutput[r];
      BRAID_TRY(checkSchedule(c, r));
    }
    BRAID_TRY(checkRounds(c));
  }
  ranks_.resize(n_);
  for (RankState& s : ranks_) {
    s.clock.assign(n_, 0);
    s.round = opts_.roundsBefore;
    s.flags.fill(opts_.roundsBefore);
    for (Clock& fc : s.flagClocks) fc.assign(n_, 0);
    s.window.assign(4 * opts_.windowBytes, 0xa5);
  }
  return Status::ok();
}

void WindowSimulator::startCall(int r) {
  RankState& s = ranks_[r];
  s.step = 0;
  s.callFirstRound = s.round;
  s.done = s.call == calls_.size();
  if (s.done) return;
  const WindowSimCall& call = calls_[s.call];
  s.scratch.assign((*call.schedules)[r].scratchElems * elemBytes(call), 0);
  s.ending = (*call.schedules)[r].steps.empty();
}

bool WindowSimulator::lends(size_t c, int q, BufRef area) const {
  return area == BufRef::kWindowIn ? lendIn_[c][q] : lendOut_[c][q];
}

bool WindowSimulator::lentOutput(int r, int q, const Step& st) const {
  return q != r && st.src == BufRef::kWindowOut && lends(ranks_[r].call, q, st.src);
}

bool WindowSimulator::runnable(int r) {
  const RankState& s = ranks_[r];
  auto every = [&](WinFlag f, uint64_t v, int only) {
    for (int q = 0; q < n_; ++q) {
      if (q != r && (only < 0 || q == only) && ranks_[q].flags[int(f)] < v) return false;
    }
    return true;
  };
  if (s.ending) {
    const bool lent = lendIn_[s.call][r] || lendOut_[s.call][r];
    return !lent || s.round == s.callFirstRound || every(WinFlag::kFinished, s.round, -1);
  }
  const Step& st = (*calls_[s.call].schedules)[r].steps[s.step];
  if (st.op == OpKind::kWait) return every(st.flag, s.round, st.recvPeer);
  if (st.op == OpKind::kBeginRound && st.writes) return every(WinFlag::kReady, s.round, -1);
  return true;
}

Status WindowSimulator::step(int r) {
  RankState& s = ranks_[r];
  ++s.clock[r];
  if (s.ending) {
    BRAID_TRY(endCall(r));
    s.ending = false;
    ++s.call;
    startCall(r);
    return Status::ok();
  }
  const std::vector<Step>& steps = (*calls_[s.call].schedules)[r].steps;
  BRAID_TRY(execute(r, steps[s.step]));
  s.ending = ++s.step == steps.size();
  return Status::ok();
}

Status WindowSimulator::execute(int r, const Step& st) {
  RankState& s = ranks_[r];
  const WindowSimCall& call = calls_[s.call];
  const size_t es = elemBytes(call);
  switch (st.op) {
    case OpKind::kBeginRound:
      for (int q = 0; q < n_ && st.writes; ++q) {
        if (q != r) sync(r, ranks_[q].flagClocks[int(WinFlag::kReady)]);
      }
      ++s.round;
      return Status::ok();
    case OpKind::kSignal:
      s.flags[int(st.flag)] = s.round;
      s.flagClocks[int(st.flag)] = s.clock;
      if (st.flag == WinFlag::kReady && s.readyClock.size() < s.round - opts_.roundsBefore) {
        s.readyClock.resize(s.round - opts_.roundsBefore, 0);  // its first kReady publishes
        s.readyClock.back() = s.clock[r];
      }
      return Status::ok();
    case OpKind::kWait:
      for (int q = 0; q < n_; ++q) {
        if (q != r && (st.recvPeer < 0 || q == st.recvPeer)) {
          sync(r, ranks_[q].flagClocks[int(st.flag)]);
        }
      }
      return Status::ok();
    default:
      break;
  }
  if (st.count == 0) return Status::ok();
  if (st.op == OpKind::kReducePeers) return reducePeers(r, st);
  if (st.op == OpKind::kCopyPeer) return copyPeer(r, st);
  const uint64_t bytes = st.count * es;
  if (st.op == OpKind::kPut) {
    if ((st.src == BufRef::kInput && lendIn_[s.call][r]) ||
        (st.src == BufRef::kOutput && lendOut_[s.call][r])) {
      return Status::ok();  // lent: peers read the buffer itself
    }
    BRAID_ASSIGN_OR_RETURN(Span src, own(r, st.src, st.srcOffset, st.count, "reads"));
    BRAID_ASSIGN_OR_RETURN(Span dst, area(r, r, st.dst, st.dstOffset, st.count));
    BRAID_TRY(noteWrite(r, dst, bytes));
    std::memcpy(dst.data, src.data, bytes);
    return Status::ok();
  }
  BRAID_ASSIGN_OR_RETURN(Span src, own(r, st.src, st.srcOffset, st.count, "reads"));
  BRAID_ASSIGN_OR_RETURN(Span dst, own(r, st.dst, st.dstOffset, st.count, "writes"));
  if (src.data != dst.data && overlaps(src, dst, bytes)) {
    return invalidUsage("aliasing: " + at(r) + ": src and dst overlap without being equal");
  }
  BRAID_TRY(noteWrite(r, dst, bytes));
  if (st.final || src.data != dst.data) {
    reduceKernels(call.datatype, call.op).finalize(dst.data, src.data, st.count, st.final ? n_ : 1);
  }
  return Status::ok();
}

Status WindowSimulator::reducePeers(int r, const Step& st) {
  const WindowSimCall& call = calls_[ranks_[r].call];
  const uint64_t bytes = st.count * elemBytes(call);
  BRAID_ASSIGN_OR_RETURN(Span dst, own(r, st.dst, st.dstOffset, st.count, "writes"));
  std::vector<const uint8_t*> src(n_);
  for (int q = 0; q < n_; ++q) {
    BRAID_ASSIGN_OR_RETURN(Span t, term(r, q, st, st.ownFromBuffer));
    if (overlaps(dst, t, bytes)) {
      return invalidUsage("aliasing: " + at(r) + ": the result overlaps rank " + std::to_string(q) +
                          "'s term, which later terms still need");
    }
    BRAID_TRY(noteRead(r, t, bytes, lentOutput(r, q, st)));
    src[q] = t.data;
  }
  BRAID_TRY(noteWrite(r, dst, bytes));
  const ReduceKernels& k = reduceKernels(call.datatype, call.op);
  const int div = st.final ? n_ : 1;
  if (n_ == 1) {
    k.finalize(dst.data, src[0], st.count, div);
  } else if (n_ == 2) {
    k.reduceFinal(dst.data, nullptr, src[0], src[1], st.count, div);
  } else {
    k.reduce(dst.data, src[0], src[1], st.count);
    for (int q = 2; q < n_ - 1; ++q) k.reduce(dst.data, dst.data, src[q], st.count);
    k.reduceFinal(dst.data, nullptr, dst.data, src[n_ - 1], st.count, div);
  }
  return Status::ok();
}

Status WindowSimulator::copyPeer(int r, const Step& st) {
  const uint64_t bytes = st.count * elemBytes(calls_[ranks_[r].call]);
  BRAID_ASSIGN_OR_RETURN(Span dst, own(r, st.dst, st.dstOffset, st.count, "writes"));
  BRAID_ASSIGN_OR_RETURN(Span src, term(r, st.recvPeer, st, true));
  if (src.data != dst.data && overlaps(src, dst, bytes)) {
    return invalidUsage("aliasing: " + at(r) + ": src and dst overlap without being equal");
  }
  BRAID_TRY(noteRead(r, src, bytes, lentOutput(r, st.recvPeer, st)));
  BRAID_TRY(noteWrite(r, dst, bytes));
  if (src.data != dst.data) std::memcpy(dst.data, src.data, bytes);
  return Status::ok();
}

std::string WindowSimulator::waitsFor(int r) {
  const RankState& s = ranks_[r];
  auto flags = [&](WinFlag f, uint64_t v, int only) {
    std::string t;
    for (int q = 0; q < n_; ++q) {
      if (q == r || (only >= 0 && q != only) || ranks_[q].flags[int(f)] >= v) continue;
      t += " rank " + std::to_string(q) + "'s " + algo::winFlagName(f) + " is " +
           std::to_string(ranks_[q].flags[int(f)]) + " (want " + std::to_string(v) + ")";
    }
    return t;
  };
  if (s.ending) {
    return "rank " + std::to_string(r) + " ends call " + std::to_string(s.call) +
           " having lent a buffer, waiting for every peer's finished:" +
           flags(WinFlag::kFinished, s.round, -1);
  }
  const Step& st = (*calls_[s.call].schedules)[r].steps[s.step];
  if (st.op == OpKind::kWait) return at(r) + " waits:" + flags(st.flag, s.round, st.recvPeer);
  return at(r) + " waits to write its half:" + flags(WinFlag::kReady, s.round, -1);
}

Status WindowSimulator::deadlock() {
  std::string msg = "deadlock: no rank can run its next step;";
  for (int r = 0; r < n_; ++r) {
    if (!ranks_[r].done) msg += " " + waitsFor(r) + ";";
  }
  msg.pop_back();
  return invalidUsage(msg);
}

Status WindowSimulator::run() {
  BRAID_TRY(checkArgs());
  for (int r = 0; r < n_; ++r) startCall(r);
  std::mt19937_64 rng(opts_.seed);
  std::vector<int> order(n_);
  std::iota(order.begin(), order.end(), 0);
  for (;;) {
    bool any = false, all = true;
    if (opts_.seed != 0) std::shuffle(order.begin(), order.end(), rng);
    for (int r : order) {
      // A turn: one step in rank order; a random 0 to 3 with a seed.
      const int turns = opts_.seed != 0 ? static_cast<int>(rng() % 4) : 1;
      if (ranks_[r].done) continue;
      all = false;
      if (!runnable(r)) continue;
      any = true;
      for (int t = 0; t < turns && !ranks_[r].done && runnable(r); ++t) BRAID_TRY(step(r));
    }
    if (all) break;
    if (!any) return deadlock();
  }
  return Status::ok();
}

}  // namespace wsim

Status simulateWindows(const std::vector<WindowSimCall>& calls, const WindowSimOptions& options) {
  return wsim::WindowSimulator(calls, options).run();
}

Status simulateWindows(const std::vector<algo::Schedule>& schedules, braidDataType_t datatype,
                       braidRedOp_t op, std::vector<SimRank>& ranks,
                       const WindowSimOptions& options) {
  return simulateWindows({WindowSimCall{&schedules, &ranks, datatype, op}}, options);
}

}  // namespace braid
