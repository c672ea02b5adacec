// Runs every rank's device program (exec/cuda/device_program.h) on the host as streams would:
// rank by rank, each until a wait blocks (a counter not yet there), over host copies of
// the device state: each rank's window halves and graph region, the send slots of every ordered
// pair, the pair counters and the barrier counters. Copies and reductions use the host kernels, so
// results are what the simulator computes. It reports a deadlock (no rank can move),
// leftovers (a slice posted and never consumed), out-of-bounds addresses, overlapping
// copies, a counter set out of order, and a kernel writing memory kernels cannot write
// (a rank's output marked host memory). A captured call's flags (kSignal, kWaitSignal)
// start clear; a signal over one its peer has not cleared yet, or a flag left set at the
// end, is an error. So are, for the graph slots (their own storage), a fill of a slot not
// freed, a free of one not taken, and a slot left full at the end. kScale multiplies by the rank's
// premul-sum scalar. Header-only, for the unit tests.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "exec/cuda/device_program.h"
#include "exec/reduce.h"
#include "exec/simulator.h"

namespace braid::test {

struct DeviceState {
  size_t slotBytes = 0, halfBytes = 0, graphBytes = 0;  // graphBytes: each graph region
  std::vector<size_t> scratchBytes;                     // by rank
  std::vector<bool> outputIsHost;                       // by rank: kernels may not write its output
  // By rank: its premul-sum scalar (one element of the datatype), for kScale.
  std::vector<std::array<unsigned char, 8>> scalars;
  // Counters before the programs run: pair counters (posted = consumed: nothing pending)
  // by [from * n + to], barrier counters by rank.
  std::vector<uint64_t> pairs, barriers;
  // By rank, optional: how many operations each of its calls has, in order. Then every
  // byte of a half or graph region remembers the call that wrote it last, and a read of
  // one that another call wrote (a region refilled before a peer read it, though with the
  // same values) is an error.
  std::vector<std::vector<size_t>> calls;
};

class DeviceInterpreter {
 public:
  DeviceInterpreter(braidDataType_t type, braidRedOp_t op, std::vector<SimRank>& ranks,
                    const DeviceState& state)
      : type_(type),
        op_(op),
        ranks_(ranks),
        st_(state),
        n_(static_cast<int>(ranks.size())),
        es_(datatypeSize(type)) {}

  Status run(const std::vector<std::vector<DeviceOp>>& programs) {
    const size_t nn = static_cast<size_t>(n_ * n_);
    posted_ = st_.pairs.empty() ? std::vector<uint64_t>(nn, 0) : st_.pairs;
    consumed_ = posted_;
    barriers_ = st_.barriers.empty() ? std::vector<uint64_t>(n_, 0) : st_.barriers;
    flags_.assign(3 * nn, 0);
    full_.assign(2 * nn, 0);
    freed_.assign(2 * nn, 1);
    graphSlots_.assign(nn * 2, std::vector<uint8_t>(st_.slotBytes));
    slots_.assign(nn * 2, std::vector<uint8_t>(st_.slotBytes));
    halves_.assign(static_cast<size_t>(n_) * 2, std::vector<uint8_t>(st_.halfBytes));
    graphRegions_.assign(static_cast<size_t>(n_), std::vector<uint8_t>(st_.graphBytes));
    for (int r = 0; r < n_; ++r) {
      scratch_.emplace_back(r < static_cast<int>(st_.scratchBytes.size()) ? st_.scratchBytes[r]
                                                                          : 0);
    }
    for (auto* regions : {&halves_, &graphRegions_}) {
      tags_[regions == &halves_ ? 0 : 1].clear();
      for (const auto& region : *regions) {
        tags_[regions == &halves_ ? 0 : 1].emplace_back(region.size(), -1);
      }
    }
    std::vector<size_t> pc(n_, 0);
    call_.assign(n_, 0);
    for (;;) {
      bool progressed = false, done = true;
      for (int r = 0; r < n_; ++r) {
        while (pc[r] < programs[r].size() && canRun(programs[r][pc[r]])) {
          call_[r] = callAt(r, pc[r]);
          BRAID_TRY(execute(r, programs[r][pc[r]]));
          ++pc[r];
          progressed = true;
        }
        done = done && pc[r] == programs[r].size();
      }
      if (done) break;
      if (!progressed) return deadlock(programs, pc);
    }
    for (size_t i = 0; i < nn; ++i) {
      if (posted_[i] != consumed_[i]) {
        return invalidUsage("leftover: rank " + std::to_string(i / n_) + " posted " +
                            std::to_string(posted_[i]) + " slices to rank " +
                            std::to_string(i % n_) + ", which consumed " +
                            std::to_string(consumed_[i]));
      }
      if (full_[2 * i] != 0 || full_[2 * i + 1] != 0 || freed_[2 * i] != 1 ||
          freed_[2 * i + 1] != 1) {
        return invalidUsage("leftover: a graph slot from rank " + std::to_string(i / n_) +
                            " to rank " + std::to_string(i % n_) + " is still full");
      }
      if (flags_[i] != 0 || flags_[nn + i] != 0 || flags_[2 * nn + i] != 0) {
        return invalidUsage("leftover: rank " + std::to_string(i / n_) + "'s signal to rank " +
                            std::to_string(i % n_) + " was never cleared");
      }
    }
    return Status::ok();
  }

 private:
  bool canRun(const DeviceOp& op) const {
    switch (op.kind) {
      case DeviceOp::Kind::kWaitPosted:
        return posted_[op.from * n_ + op.to] >= op.value;
      case DeviceOp::Kind::kWaitConsumed:
        return consumed_[op.from * n_ + op.to] >= op.value;
      case DeviceOp::Kind::kWaitRank:
        return barriers_[op.from] >= op.value;
      case DeviceOp::Kind::kWaitSignal:
        return flags_[flag(op)] >= 1;
      case DeviceOp::Kind::kWaitFull:
        return full_[slotFlag(op)] >= 1;
      case DeviceOp::Kind::kWaitFreed:
        return freed_[slotFlag(op)] >= 1;
      default:
        return true;
    }
  }

  Status deadlock(const std::vector<std::vector<DeviceOp>>& programs,
                  const std::vector<size_t>& pc) const {
    std::string msg = "deadlock:";
    for (int r = 0; r < n_; ++r) {
      if (pc[r] == programs[r].size()) continue;
      const DeviceOp& op = programs[r][pc[r]];
      const char* what = op.kind == DeviceOp::Kind::kWaitPosted     ? "posted["
                         : op.kind == DeviceOp::Kind::kWaitConsumed ? "consumed["
                         : op.kind == DeviceOp::Kind::kWaitSignal   ? "signal["
                         : op.kind == DeviceOp::Kind::kWaitFull     ? "full["
                         : op.kind == DeviceOp::Kind::kWaitFreed    ? "freed["
                                                                    : "barrier[";
      msg += " rank " + std::to_string(r) + " waits for " + what + std::to_string(op.from) +
             (op.kind == DeviceOp::Kind::kWaitRank ? "" : "][" + std::to_string(op.to)) +
             "] >= " + std::to_string(op.value) + ";";
    }
    return invalidUsage(msg);
  }

  // The call of rank r that its operation `at` belongs to (0 without DeviceState::calls).
  int callAt(int r, size_t at) const {
    if (r >= static_cast<int>(st_.calls.size())) return 0;
    int k = 0;
    for (size_t ops : st_.calls[r]) {
      if (at < ops) return k;
      at -= ops;
      ++k;
    }
    return k;
  }

  // The write tags of `a`'s bytes when it is a half or a graph region, else null.
  int* tags(const DeviceAddr& a) {
    if (a.space == DeviceAddr::Space::kHalf) return tags_[0][a.from * 2 + a.slot].data() + a.offset;
    if (a.space == DeviceAddr::Space::kGraphRegion) return tags_[1][a.from].data() + a.offset;
    return nullptr;
  }

  // Rank r reads `bytes` of `a`: written in r's current call (when calls are given).
  Status checkRead(int r, const DeviceAddr& a, uint64_t bytes) {
    const int* t = st_.calls.empty() ? nullptr : tags(a);
    for (uint64_t i = 0; t != nullptr && i < bytes; ++i) {
      if (t[i] == call_[r]) continue;
      return invalidUsage("rank " + std::to_string(r) + " in call " + std::to_string(call_[r]) +
                          " reads rank " + std::to_string(a.from) + "'s " +
                          (a.space == DeviceAddr::Space::kHalf ? "half" : "graph region") +
                          " as call " + std::to_string(t[i]) + " left it");
    }
    return Status::ok();
  }

  // The bytes [offset, offset + bytes) of rank r's `a`, or null when out of bounds.
  uint8_t* resolve(int r, const DeviceAddr& a, uint64_t bytes) {
    SimRank& rk = ranks_[r];
    uint8_t* base = nullptr;
    size_t size = 0;
    switch (a.space) {
      case DeviceAddr::Space::kInput:
        base = rk.inPlace ? rk.output.data() + rk.inPlaceOffset * es_ : rk.input.data();
        size = rk.inPlace ? rk.output.size() - rk.inPlaceOffset * es_ : rk.input.size();
        break;
      case DeviceAddr::Space::kOutput:
        base = rk.output.data() + rk.outputOffset * es_;
        size = rk.outputElems != 0 ? rk.outputElems * es_ : rk.output.size();
        break;
      case DeviceAddr::Space::kScratch:
        base = scratch_[r].data();
        size = scratch_[r].size();
        break;
      case DeviceAddr::Space::kSlot:
        if (a.from < 0 || a.from >= n_ || a.to < 0 || a.to >= n_ || a.slot > 1) return nullptr;
        if (a.from != r && a.to != r) return nullptr;  // only a pair's two ranks touch its slots
        base = slots_[static_cast<size_t>((a.from * n_ + a.to) * 2 + a.slot)].data();
        size = st_.slotBytes;
        break;
      case DeviceAddr::Space::kGraphSlot:
        if (a.from < 0 || a.from >= n_ || a.to < 0 || a.to >= n_ || a.slot > 1) return nullptr;
        if (a.from != r && a.to != r) return nullptr;
        base = graphSlots_[static_cast<size_t>((a.from * n_ + a.to) * 2 + a.slot)].data();
        size = st_.slotBytes;
        break;
      case DeviceAddr::Space::kHalf:
        if (a.from < 0 || a.from >= n_ || a.slot > 1) return nullptr;
        base = halves_[static_cast<size_t>(a.from * 2 + a.slot)].data();
        size = st_.halfBytes;
        break;
      case DeviceAddr::Space::kGraphRegion:
        if (a.from < 0 || a.from >= n_) return nullptr;
        base = graphRegions_[static_cast<size_t>(a.from)].data();
        size = st_.graphBytes;
        break;
    }
    if (a.offset > size || bytes > size - a.offset) return nullptr;
    return base + a.offset;
  }

  Status counter(int r, const DeviceOp& op) {
    uint64_t& c = op.kind == DeviceOp::Kind::kArrive ? barriers_[op.from]
                  : op.kind == DeviceOp::Kind::kPost ? posted_[op.from * n_ + op.to]
                                                     : consumed_[op.from * n_ + op.to];
    const bool own = op.kind == DeviceOp::Kind::kArrive ? op.from == r
                     : op.kind == DeviceOp::Kind::kPost ? op.from == r
                                                        : op.to == r;
    if (!own || op.value != c + 1) {
      return invalidUsage("rank " + std::to_string(r) + " sets a counter from " +
                          std::to_string(c) + " to " + std::to_string(op.value) +
                          (own ? "" : " that is not its own"));
    }
    c = op.value;
    return Status::ok();
  }

  size_t slotFlag(const DeviceOp& op) const {
    return static_cast<size_t>((op.from * n_ + op.to) * 2) + op.value % 2;
  }

  // A graph slot's flag set (kFill: full, by the sender; kFree: freed, by the receiver)
  // or waited for and cleared (kWaitFull by the receiver, kWaitFreed by the sender).
  Status slotOp(int r, const DeviceOp& op) {
    const bool sender = op.kind == DeviceOp::Kind::kFill || op.kind == DeviceOp::Kind::kWaitFreed;
    if ((sender ? op.from : op.to) != r || op.value > 1) {
      return invalidUsage("rank " + std::to_string(r) + " works another pair's graph slot");
    }
    const bool onFull = op.kind == DeviceOp::Kind::kFill || op.kind == DeviceOp::Kind::kWaitFull;
    uint8_t& f = (onFull ? full_ : freed_)[slotFlag(op)];
    const bool sets = op.kind == DeviceOp::Kind::kFill || op.kind == DeviceOp::Kind::kFree;
    if (sets && f != 0) {
      return invalidUsage("rank " + std::to_string(r) + (onFull ? " fills" : " frees") +
                          " a graph slot that is already " + (onFull ? "full" : "free"));
    }
    f = sets ? 1 : 0;
    return Status::ok();
  }

  size_t flag(const DeviceOp& op) const {
    return static_cast<size_t>((static_cast<int>(op.value % 3) * n_ + op.from) * n_ + op.to);
  }

  Status execute(int r, const DeviceOp& op) {
    switch (op.kind) {
      case DeviceOp::Kind::kSignal:
        if (op.from != r || op.value > 2 || flags_[flag(op)] != 0) {
          return invalidUsage("rank " + std::to_string(r) + " signals rank " +
                              std::to_string(op.to) + " in set " + std::to_string(op.value) +
                              (op.from != r ? " for another rank" : " before it cleared the last"));
        }
        flags_[flag(op)] = 1;
        return Status::ok();
      case DeviceOp::Kind::kWaitSignal:
        if (op.to != r) return invalidUsage("a rank clears another rank's signal");
        flags_[flag(op)] = 0;
        return Status::ok();
      case DeviceOp::Kind::kWaitFreed:
      case DeviceOp::Kind::kFill:
      case DeviceOp::Kind::kWaitFull:
      case DeviceOp::Kind::kFree:
        return slotOp(r, op);
      case DeviceOp::Kind::kWaitPosted:
      case DeviceOp::Kind::kWaitConsumed:
      case DeviceOp::Kind::kWaitRank:
        return Status::ok();
      case DeviceOp::Kind::kPost:
      case DeviceOp::Kind::kConsume:
      case DeviceOp::Kind::kArrive:
        return counter(r, op);
      case DeviceOp::Kind::kCopy:
      case DeviceOp::Kind::kReduce:
      case DeviceOp::Kind::kScale:
        break;
    }
    const bool reduce = op.kind == DeviceOp::Kind::kReduce;
    if (op.kind == DeviceOp::Kind::kScale && r >= static_cast<int>(st_.scalars.size())) {
      return invalidUsage("rank " + std::to_string(r) + " scales with no scalar");
    }
    const std::string where = "rank " + std::to_string(r) + ": ";
    if (reduce && op.dst.space == DeviceAddr::Space::kOutput &&
        r < static_cast<int>(st_.outputIsHost.size()) && st_.outputIsHost[r]) {
      return invalidUsage(where + "a kernel writes the output, which is host memory");
    }
    uint8_t* dst = resolve(r, op.dst, op.bytes);
    std::vector<const uint8_t*> srcs;
    for (int i = 0; i < (reduce ? op.nsrcs : 1); ++i)
      srcs.push_back(resolve(r, op.src[i], op.bytes));
    if (dst == nullptr) return invalidUsage(where + "an operation writes out of bounds");
    for (const uint8_t* src : srcs) {
      if (src == nullptr) return invalidUsage(where + "an operation reads out of bounds");
      if (src != dst && src < dst + op.bytes && dst < src + op.bytes) {
        return invalidUsage(where + "source and destination overlap");
      }
    }
    for (size_t i = 0; i < srcs.size(); ++i) BRAID_TRY(checkRead(r, op.src[i], op.bytes));
    if (int* t = tags(op.dst)) std::fill(t, t + op.bytes, call_[r]);
    const size_t count = op.bytes / es_;
    const int divisor = op.final ? n_ : 1;
    const ReduceKernels& k = reduceKernels(type_, op_);
    if (op.kind == DeviceOp::Kind::kScale) {
      reduceKernels(type_, braidSum).scale(dst, srcs[0], count, st_.scalars[r].data());
    } else if (!reduce) {
      if (dst != srcs[0]) std::memcpy(dst, srcs[0], op.bytes);
    } else if (op.nsrcs == 1) {
      k.finalize(dst, srcs[0], count, divisor);
    } else {
      // In source order, as the kernel accumulates; the last step finalises. Through a
      // temporary: dst may be one of the sources.
      std::vector<uint8_t> acc(op.bytes);
      std::memcpy(acc.data(), srcs[0], op.bytes);
      for (int i = 1; i < op.nsrcs; ++i) {
        if (i + 1 == op.nsrcs && op.final) {
          k.reduceFinal(acc.data(), nullptr, acc.data(), srcs[i], count, divisor);
        } else {
          k.reduce(acc.data(), acc.data(), srcs[i], count);
        }
      }
      std::memcpy(dst, acc.data(), op.bytes);
    }
    return Status::ok();
  }

  braidDataType_t type_;
  braidRedOp_t op_;
  std::vector<SimRank>& ranks_;
  const DeviceState& st_;
  int n_;
  size_t es_;
  std::vector<std::vector<uint8_t>> scratch_, slots_, halves_;
  std::vector<uint64_t> posted_, consumed_, barriers_;
  std::vector<uint8_t> flags_;         // [set][from][to], 3 sets
  std::vector<uint8_t> full_, freed_;  // graph slots' flags, [from][to][j]
  std::vector<std::vector<uint8_t>> graphSlots_, graphRegions_;  // by pair and slot; by rank
  std::vector<std::vector<int>> tags_[2];  // halves', graph regions': each byte's writing call
  std::vector<int> call_;                  // by rank: the call of its operation running
};

}  // namespace braid::test
