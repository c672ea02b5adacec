// The device lowering (exec/device_program.h), checked on the host: every rank's schedule
// is lowered and the programs are interpreted here as streams would run them (each rank's
// operations in order; a wait holds that rank until the counter is there), over slots of
// a few bytes, so every path slices. Every algorithm and collective the registry offers
// must give what the simulator's reference says, without deadlock, leaving every slot
// consumed; the interpreter itself must see a deadlock and a malformed copy.
#include "exec/device_program.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "algorithms/registry.h"
#include "exec/reduce.h"
#include "tests/unit/algorithms/coll_check.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::BufRef;
using algo::Collective;
using algo::OpKind;
using algo::Schedule;
using algo::Step;
using Kind = DeviceOp::Kind;
using Space = DeviceAddr::Space;

// Slices each pair had moved before the call, alike on both sides (a prior call's).
uint64_t startCount(int from, int to) { return static_cast<uint64_t>(from * 7 + to * 3) % 5; }

// Every rank's program run as streams would: rank by rank, each until a wait blocks.
class Interpreter {
 public:
  Interpreter(const std::vector<Schedule>& scheds, braidDataType_t type, braidRedOp_t op,
              std::vector<SimRank>& ranks, size_t slotBytes)
      : scheds_(scheds),
        type_(type),
        op_(op),
        ranks_(ranks),
        slotBytes_(slotBytes),
        n_(static_cast<int>(scheds.size())),
        es_(datatypeSize(type)) {}

  Status run() {
    std::vector<std::vector<DeviceOp>> programs(n_);
    posted_.assign(n_ * n_, 0);
    consumed_.assign(n_ * n_, 0);
    for (int r = 0; r < n_; ++r) {
      PairCounts counts(n_);
      for (int p = 0; p < n_; ++p) {
        counts.sent[p] = startCount(r, p);
        counts.received[p] = startCount(p, r);
        posted_[r * n_ + p] = consumed_[r * n_ + p] = startCount(r, p);
      }
      BRAID_ASSIGN_OR_RETURN(programs[r], lowerSchedule(scheds_[r], es_, slotBytes_, &counts));
      scratch_.emplace_back(scheds_[r].scratchElems * es_);
    }
    slots_.assign(static_cast<size_t>(n_ * n_ * 2), std::vector<uint8_t>(slotBytes_));
    std::vector<size_t> pc(n_, 0);
    for (;;) {
      bool progressed = false, done = true;
      for (int r = 0; r < n_; ++r) {
        while (pc[r] < programs[r].size() && canRun(programs[r][pc[r]])) {
          BRAID_TRY(execute(r, programs[r][pc[r]]));
          ++pc[r];
          progressed = true;
        }
        done = done && pc[r] == programs[r].size();
      }
      if (done) break;
      if (!progressed) return deadlock(programs, pc);
    }
    for (size_t i = 0; i < posted_.size(); ++i) {
      if (posted_[i] != consumed_[i]) {
        return invalidUsage("leftover: rank " + std::to_string(i / n_) + " posted " +
                            std::to_string(posted_[i]) + " slices to rank " +
                            std::to_string(i % n_) + ", which consumed " +
                            std::to_string(consumed_[i]));
      }
    }
    return Status::ok();
  }

 private:
  bool canRun(const DeviceOp& op) const {
    if (op.kind == Kind::kWaitPosted) return posted_[op.from * n_ + op.to] >= op.value;
    if (op.kind == Kind::kWaitConsumed) return consumed_[op.from * n_ + op.to] >= op.value;
    return true;
  }

  Status deadlock(const std::vector<std::vector<DeviceOp>>& programs,
                  const std::vector<size_t>& pc) const {
    std::string msg = "deadlock:";
    for (int r = 0; r < n_; ++r) {
      if (pc[r] == programs[r].size()) continue;
      const DeviceOp& op = programs[r][pc[r]];
      msg += " rank " + std::to_string(r) + " waits for " +
             (op.kind == Kind::kWaitPosted ? "posted[" : "consumed[") + std::to_string(op.from) +
             "][" + std::to_string(op.to) + "] >= " + std::to_string(op.value) + ";";
    }
    return invalidUsage(msg);
  }

  // The bytes [offset, offset + bytes) of rank r's `a`, or null when out of bounds.
  uint8_t* resolve(int r, const DeviceAddr& a, uint64_t bytes) {
    SimRank& rk = ranks_[r];
    uint8_t* base = nullptr;
    size_t size = 0;
    switch (a.space) {
      case Space::kInput:
        base = rk.inPlace ? rk.output.data() + rk.inPlaceOffset * es_ : rk.input.data();
        size = rk.inPlace ? rk.output.size() - rk.inPlaceOffset * es_ : rk.input.size();
        break;
      case Space::kOutput:
        base = rk.output.data() + rk.outputOffset * es_;
        size = rk.outputElems != 0 ? rk.outputElems * es_ : rk.output.size();
        break;
      case Space::kScratch:
        base = scratch_[r].data();
        size = scratch_[r].size();
        break;
      case Space::kSlot:
        if (a.from < 0 || a.from >= n_ || a.to < 0 || a.to >= n_ || a.slot > 1) return nullptr;
        if (a.from != r && a.to != r) return nullptr;  // only a pair's two ranks touch its slots
        base = slots_[static_cast<size_t>((a.from * n_ + a.to) * 2 + a.slot)].data();
        size = slotBytes_;
        break;
    }
    if (a.offset > size || bytes > size - a.offset) return nullptr;
    return base + a.offset;
  }

  Status execute(int r, const DeviceOp& op) {
    switch (op.kind) {
      case Kind::kWaitPosted:
      case Kind::kWaitConsumed:
        return Status::ok();
      case Kind::kPost:
      case Kind::kConsume: {
        uint64_t& c = (op.kind == Kind::kPost ? posted_ : consumed_)[op.from * n_ + op.to];
        if (op.value != c + 1) {
          return invalidUsage("rank " + std::to_string(r) + " sets a counter from " +
                              std::to_string(c) + " to " + std::to_string(op.value));
        }
        c = op.value;
        return Status::ok();
      }
      case Kind::kCopy:
      case Kind::kReduce:
        break;
    }
    uint8_t* dst = resolve(r, op.dst, op.bytes);
    const uint8_t* a = resolve(r, op.a, op.bytes);
    const uint8_t* b = op.kind == Kind::kReduce && op.nsrcs == 2 ? resolve(r, op.b, op.bytes) : a;
    if (dst == nullptr || a == nullptr || b == nullptr) {
      return invalidUsage("rank " + std::to_string(r) + ": an operation reaches out of bounds");
    }
    for (const uint8_t* src : {a, b}) {
      if (src != dst && src < dst + op.bytes && dst < src + op.bytes) {
        return invalidUsage("rank " + std::to_string(r) + ": source and destination overlap");
      }
    }
    const size_t count = op.bytes / es_;
    const int divisor = op.final ? n_ : 1;
    const ReduceKernels& k = reduceKernels(type_, op_);
    if (op.kind == Kind::kCopy) {
      if (dst != a) std::memcpy(dst, a, op.bytes);
    } else if (op.nsrcs == 1) {
      k.finalize(dst, a, count, divisor);
    } else if (op.final) {
      k.reduceFinal(dst, nullptr, a, b, count, divisor);
    } else {
      k.reduce(dst, a, b, count);
    }
    return Status::ok();
  }

  const std::vector<Schedule>& scheds_;
  braidDataType_t type_;
  braidRedOp_t op_;
  std::vector<SimRank>& ranks_;
  size_t slotBytes_;
  int n_;
  size_t es_;
  std::vector<std::vector<uint8_t>> scratch_, slots_;
  std::vector<uint64_t> posted_, consumed_;
};

test::RunFn lowered(size_t slotBytes) {
  return [slotBytes](const std::vector<Schedule>& s, braidDataType_t t, braidRedOp_t op,
                     std::vector<SimRank>& ranks,
                     const SimOptions&) { return Interpreter(s, t, op, ranks, slotBytes).run(); };
}

class DeviceLowering : public ::testing::TestWithParam<int> {};

// As the CUDA executor builds schedules: one slot per step at most (the host's half a
// FIFO), here slots of 16 bytes, 2 to 8 ranks (the device windows' range).
TEST_P(DeviceLowering, EveryCollectiveMatchesTheReference) {
  const Algorithm alg = static_cast<Algorithm>(GetParam());
  const std::pair<braidDataType_t, braidRedOp_t> kTypeOps[] = {{braidFloat32, braidSum},
                                                               {braidInt32, braidMax},
                                                               {braidBfloat16, braidAvg},
                                                               {braidUint8, braidProd}};
  constexpr size_t kSlot = 16;
  int cases = 0;
  for (Collective coll : test::kAllCollectives) {
    if (!algo::supports(alg, coll)) continue;
    for (int n = 2; n <= 8; ++n) {
      for (uint64_t count : {uint64_t{1}, uint64_t(n + 1), uint64_t{97}, uint64_t{1500}}) {
        for (bool inPlace : {false, true}) {
          const auto typeOp = kTypeOps[(count + n + inPlace) % 4];
          const test::CheckCase c =
              test::sweepCase(coll, n, count, inPlace, typeOp, kSlot / datatypeSize(typeOp.first));
          auto build = [alg](const algo::CollArgs& a) { return algo::buildSchedule(alg, a); };
          EXPECT_EQ(test::checkCollective(build, c, lowered(kSlot)), "")
              << algo::algorithmName(alg);
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 0) << algo::algorithmName(alg) << " implements nothing";
}

INSTANTIATE_TEST_SUITE_P(Registry, DeviceLowering, ::testing::Range(0, algo::kNumAlgorithms),
                         [](const auto& info) {
                           return std::string(
                               algo::algorithmName(static_cast<Algorithm>(info.param)));
                         });

Step step(OpKind op, BufRef src, BufRef dst, int sendPeer, int recvPeer, uint64_t count,
          bool batchWithNext = false) {
  Step s{op, src, dst, sendPeer, recvPeer, 0, 0, count};
  s.batchWithNext = batchWithNext;
  return s;
}

Schedule schedule(int rank, int nranks, std::vector<Step> steps) {
  Schedule s;
  s.rank = rank;
  s.nranks = nranks;
  s.steps = std::move(steps);
  return s;
}

std::vector<SimRank> ranksOf(int n, size_t bytes) {
  std::vector<SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    ranks[r].input.assign(bytes, static_cast<uint8_t>(r + 1));
    ranks[r].output.assign(bytes, 0);
  }
  return ranks;
}

// A step larger than a slot goes in slices through alternating slots, numbered from
// where the pair's counts stood.
TEST(DeviceLowering, SlicesAlternateSlotsAndCountOnFromThePairsCount) {
  PairCounts counts(2);
  counts.sent[1] = 4;
  Schedule s = schedule(0, 2, {step(OpKind::kSend, BufRef::kInput, BufRef::kNone, 1, -1, 40)});
  Expected<std::vector<DeviceOp>> ops = lowerSchedule(s, 4, 64, &counts);
  ASSERT_TRUE(ops.isOk()) << ops.status().message();
  // 160 bytes: slices 5, 6, 7 (64, 64, 32 bytes) through slots 1, 0, 1.
  std::vector<uint64_t> posted, waited;
  std::vector<int> slots;
  uint64_t bytes = 0;
  for (const DeviceOp& op : ops.value()) {
    if (op.kind == Kind::kPost) posted.push_back(op.value);
    if (op.kind == Kind::kWaitConsumed) waited.push_back(op.value);
    if (op.kind == Kind::kCopy) {
      slots.push_back(op.dst.slot);
      EXPECT_EQ(op.a.offset, bytes);
      bytes += op.bytes;
    }
  }
  EXPECT_EQ(posted, (std::vector<uint64_t>{5, 6, 7}));
  EXPECT_EQ(waited, (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(slots, (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(bytes, 160u);
  EXPECT_EQ(counts.sent[1], 7u);
}

// Both ranks receive before they send, outside a batch: the programs wait for each other,
// and the interpreter says so. In one batch the sends go first and it completes.
TEST(DeviceLowering, InterpreterSeesADeadlockThatABatchAvoids) {
  for (bool batch : {false, true}) {
    std::vector<Schedule> s;
    for (int r = 0; r < 2; ++r) {
      s.push_back(
          schedule(r, 2,
                   {step(OpKind::kRecv, BufRef::kNone, BufRef::kOutput, -1, 1 - r, 8, batch),
                    step(OpKind::kSend, BufRef::kInput, BufRef::kNone, 1 - r, -1, 8)}));
    }
    std::vector<SimRank> ranks = ranksOf(2, 8);
    Status st = Interpreter(s, braidUint8, braidSum, ranks, 4).run();
    if (!batch) {
      EXPECT_NE(st.message().find("deadlock"), std::string::npos) << st.message();
      continue;
    }
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(ranks[0].output, std::vector<uint8_t>(8, 2));
    EXPECT_EQ(ranks[1].output, std::vector<uint8_t>(8, 1));
  }
}

// A batch whose sends to one peer are of both kinds would number that pair's slices in
// an order the receiver does not share: refused, and the counts stay.
TEST(DeviceLowering, RefusesABatchMixingPureAndRelayedSendsToOnePeer) {
  PairCounts counts(3);
  Schedule s = schedule(0, 3,
                        {step(OpKind::kRecvCopySend, BufRef::kNone, BufRef::kOutput, 1, 2, 8, true),
                         step(OpKind::kSend, BufRef::kInput, BufRef::kNone, 1, -1, 8)});
  Expected<std::vector<DeviceOp>> ops = lowerSchedule(s, 1, 4, &counts);
  ASSERT_FALSE(ops.isOk());
  EXPECT_NE(ops.status().message().find("send to rank 1"), std::string::npos)
      << ops.status().message();
  EXPECT_EQ(counts.sent, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(counts.received, (std::vector<uint64_t>{0, 0, 0}));
}

// Receive-reduce-send fuses into the outgoing slot; a final copy of avg divides.
TEST(DeviceLowering, FusedReductionWritesTheOutgoingSlotAndFinalCopiesDivide) {
  PairCounts counts(3);
  Schedule s = schedule(1, 3,
                        {step(OpKind::kRecvReduceSend, BufRef::kInput, BufRef::kNone, 2, 0, 2),
                         step(OpKind::kCopy, BufRef::kInput, BufRef::kOutput, -1, -1, 2)});
  s.steps[1].final = true;
  Expected<std::vector<DeviceOp>> ops = lowerSchedule(s, 4, 8, &counts);
  ASSERT_TRUE(ops.isOk()) << ops.status().message();
  std::vector<Kind> kinds;
  for (const DeviceOp& op : ops.value()) kinds.push_back(op.kind);
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::kWaitPosted, Kind::kReduce, Kind::kPost, Kind::kConsume,
                                      Kind::kReduce}));
  const DeviceOp& fused = ops.value()[1];
  EXPECT_EQ(fused.dst.space, Space::kSlot);
  EXPECT_EQ(fused.dst.from, 1);
  EXPECT_EQ(fused.dst.to, 2);
  EXPECT_EQ(fused.b.space, Space::kSlot);
  EXPECT_EQ(fused.b.from, 0);
  EXPECT_FALSE(fused.final);
  EXPECT_EQ(ops.value()[4].nsrcs, 1);
  EXPECT_TRUE(ops.value()[4].final);
}

}  // namespace
}  // namespace braid
