// The device lowering (exec/cuda/device_program.h), checked on the host: every rank's schedule
// is lowered and the programs are interpreted here as streams would run them (each rank's
// operations in order; a wait holds that rank until the counter is there), over slots of
// a few bytes, so every path slices. Every algorithm and collective the registry offers
// must give what the simulator's reference says, without deadlock, leaving every slot
// consumed; the interpreter itself must see a deadlock and a malformed copy.
#include "exec/cuda/device_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "algorithms/registry.h"
#include "exec/reduce.h"
#include "tests/unit/algorithms/coll_check.h"
#include "tests/unit/exec/cuda/device_interpreter.h"

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

// Lowers every rank's schedule (pair counts starting where startCount says) and runs the
// programs in the interpreter. `sequence`: the calls in a row, each captured into a CUDA
// graph (true: the graph slots and their flags, counted from zero) or not (the ordinary
// slots, counting on).
Status runLowered(const std::vector<Schedule>& scheds, braidDataType_t type, braidRedOp_t op,
                  std::vector<SimRank>& ranks, size_t slotBytes,
                  const std::vector<bool>& sequence = {false}) {
  const int n = static_cast<int>(scheds.size());
  const size_t es = datatypeSize(type);
  test::DeviceState state;
  state.slotBytes = slotBytes;
  std::vector<std::vector<DeviceOp>> programs(n);
  for (int r = 0; r < n; ++r) {
    PairCounts counts(n);
    for (int p = 0; p < n; ++p) {
      counts.sent[p] = startCount(r, p);
      counts.received[p] = startCount(p, r);
      state.pairs.push_back(startCount(r, p));
    }
    for (bool captured : sequence) {
      PairCounts zero(n);
      BRAID_ASSIGN_OR_RETURN(
          std::vector<DeviceOp> ops,
          lowerSchedule(scheds[r], es, slotBytes, captured ? &zero : &counts, captured));
      programs[r].insert(programs[r].end(), ops.begin(), ops.end());
    }
    state.scratchBytes.push_back(scheds[r].scratchElems * es);
  }
  return test::DeviceInterpreter(type, op, ranks, state).run(programs);
}

test::RunFn lowered(size_t slotBytes, std::vector<bool> sequence = {false}) {
  return [slotBytes, sequence](const std::vector<Schedule>& s, braidDataType_t t, braidRedOp_t op,
                               std::vector<SimRank>& ranks, const SimOptions&) {
    return runLowered(s, t, op, ranks, slotBytes, sequence);
  };
}

class DeviceLowering : public ::testing::TestWithParam<int> {};

// As the CUDA executor builds schedules: one slot per step at most (the host's half a
// FIFO), here slots of 16 bytes, 2 to 8 ranks (the device windows' range), and 1 rank (its
// schedule is local copies, which device calls on one rank enqueue).
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
    for (int n = 1; n <= 8; ++n) {
      for (uint64_t count :
           {uint64_t{0}, uint64_t{1}, uint64_t(n + 1), uint64_t{97}, uint64_t{1500}}) {
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

// The same, captured into a CUDA graph (graph slots and flags): in place once; out of
// place as a graph is used, captured, ordinary, captured, captured in a row (each writes
// the same result), so a slot filled before its receiver freed it, or left full, shows.
TEST_P(DeviceLowering, EveryCollectiveMatchesTheReferenceWhenCaptured) {
  const Algorithm alg = static_cast<Algorithm>(GetParam());
  constexpr size_t kSlot = 16;
  int cases = 0;
  for (Collective coll : test::kAllCollectives) {
    if (!algo::supports(alg, coll)) continue;
    for (int n = 2; n <= 8; n += 3) {
      for (uint64_t count : {uint64_t{1}, uint64_t(n + 1), uint64_t{97}}) {
        for (bool inPlace : {false, true}) {
          const test::CheckCase c =
              test::sweepCase(coll, n, count, inPlace, {braidInt32, braidSum}, kSlot / 4);
          auto build = [alg](const algo::CollArgs& a) { return algo::buildSchedule(alg, a); };
          const std::vector<bool> sequence =
              c.inPlace ? std::vector<bool>{true} : std::vector<bool>{true, false, true, true};
          EXPECT_EQ(test::checkCollective(build, c, lowered(kSlot, sequence)), "")
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
      EXPECT_EQ(op.src[0].offset, bytes);
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
    Status st = runLowered(s, braidUint8, braidSum, ranks, 4);
    if (!batch) {
      EXPECT_NE(st.message().find("deadlock"), std::string::npos) << st.message();
      continue;
    }
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(ranks[0].output, std::vector<uint8_t>(8, 2));
    EXPECT_EQ(ranks[1].output, std::vector<uint8_t>(8, 1));
  }
}

// A group in which every rank sends three messages to its right neighbour and two to its
// left (and receives as many), with 4-byte slots: more sends to one peer than it has
// slots, before any receive. Rounds by lane complete it; rounds by each message's own
// slices would have every rank wait for a third slot.
TEST(DeviceLowering, AGroupWithMoreSendsToOnePeerThanSlotsCompletes) {
  const int n = 3;
  const uint64_t right[3] = {5, 9, 3}, left[2] = {6, 4};  // bytes of each message
  std::vector<Schedule> s;
  for (int r = 0; r < n; ++r) {
    std::vector<Step> steps;
    uint64_t in = 0, out = 0;
    auto send = [&](int peer, uint64_t bytes) {
      steps.push_back(step(OpKind::kSend, BufRef::kInput, BufRef::kNone, peer, -1, bytes, true));
      steps.back().srcOffset = in;
      in += bytes;
    };
    auto recv = [&](int peer, uint64_t bytes) {
      steps.push_back(step(OpKind::kRecv, BufRef::kNone, BufRef::kOutput, -1, peer, bytes, true));
      steps.back().dstOffset = out;
      out += bytes;
    };
    for (uint64_t b : right) send((r + 1) % n, b);
    for (uint64_t b : left) send((r + n - 1) % n, b);
    for (uint64_t b : right) recv((r + n - 1) % n, b);
    for (uint64_t b : left) recv((r + 1) % n, b);
    steps.back().batchWithNext = false;
    s.push_back(schedule(r, n, steps));
  }
  std::vector<SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < 27; ++i) ranks[r].input.push_back(static_cast<uint8_t>(r * 50 + i));
    ranks[r].output.assign(27, 0);
  }
  ASSERT_TRUE(runLowered(s, braidUint8, braidSum, ranks, 4).isOk());
  for (int r = 0; r < n; ++r) {
    const int from = (r + n - 1) % n, back = (r + 1) % n;
    for (int i = 0; i < 17; ++i) EXPECT_EQ(ranks[r].output[i], from * 50 + i) << r << " " << i;
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(ranks[r].output[17 + i], back * 50 + 17 + i) << r << " " << i;
    }
  }
}

// One rank's schedules (device calls on a 1-rank communicator enqueue them, slot sized to
// the call) are copies and reductions of its own buffers only: no counters, no slots.
TEST(DeviceLowering, OneRankSchedulesAreLocalStepsOnly) {
  for (int i = 0; i < algo::kNumAlgorithms; ++i) {
    const Algorithm alg = static_cast<Algorithm>(i);
    for (Collective coll : test::kAllCollectives) {
      if (!algo::supports(alg, coll)) continue;
      for (uint64_t count : {uint64_t{0}, uint64_t{5}}) {
        algo::CollArgs a;
        a.collective = coll;
        a.nranks = 1;
        a.count = count;
        a.elemSize = 4;
        a.maxStepElems = std::max<uint64_t>(count, 1);
        a.sendCounts = a.sendDispls = a.recvCounts = a.recvDispls = {count};
        const Schedule s = algo::buildSchedule(alg, a);
        PairCounts none(1);
        Expected<std::vector<DeviceOp>> ops =
            lowerSchedule(s, 4, std::max<uint64_t>(count, 1) * 4, &none);
        ASSERT_TRUE(ops.isOk()) << algo::algorithmName(alg) << ": " << ops.status().message();
        for (const DeviceOp& op : ops.value()) {
          EXPECT_TRUE(op.kind == Kind::kCopy || op.kind == Kind::kReduce)
              << algo::algorithmName(alg) << " " << algo::collectiveName(coll);
          EXPECT_TRUE(op.dst.space == Space::kOutput ||
                      (op.dst.space == Space::kScratch && s.scratchElems != 0))
              << algo::algorithmName(alg) << " " << algo::collectiveName(coll) << " scratch "
              << s.scratchElems;
        }
      }
    }
  }
}

// Random groups of sends and receives, as users write them: 2..6 ranks, up to 12
// messages of 0..40 bytes between random pairs (several to one peer too), each rank's
// list in a random order that keeps each pair's messages in order, slots of 1..16 bytes.
// Every group completes in the interpreter and every message lands where its receive says.
TEST(DeviceLowering, RandomGroupsOfSendsAndReceivesComplete) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 5);
    struct Message {
      int from, to;
      uint64_t bytes, at, into;  // at: offset in from's input; into: offset in to's output
    };
    std::vector<Message> msgs;
    std::vector<uint64_t> in(n, 0), out(n, 0);
    const int count = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < count; ++i) {
      Message m;
      m.from = static_cast<int>(rng() % n);
      m.to = (m.from + 1 + static_cast<int>(rng() % (n - 1))) % n;
      m.bytes = rng() % 41;
      m.at = in[m.from];
      m.into = out[m.to];
      in[m.from] += m.bytes;
      out[m.to] += m.bytes;
      msgs.push_back(m);
    }
    // Each rank's steps: its messages (sends and receives) in a random order that keeps
    // the order of each pair's messages (the order both sides agree on).
    std::vector<Schedule> s;
    for (int r = 0; r < n; ++r) {
      std::vector<size_t> mine;
      for (size_t i = 0; i < msgs.size(); ++i) {
        if (msgs[i].from == r || msgs[i].to == r) mine.push_back(i);
      }
      // A random merge of the pair queues (messages to, or from, one peer), each in order.
      std::vector<std::vector<size_t>> queues;
      std::vector<std::pair<int, int>> pairs;
      for (size_t k = 0; k < mine.size(); ++k) {
        const std::pair<int, int> pair{msgs[mine[k]].from, msgs[mine[k]].to};
        size_t q = 0;
        while (q < pairs.size() && pairs[q] != pair) ++q;
        if (q == pairs.size()) {
          pairs.push_back(pair);
          queues.emplace_back();
        }
        queues[q].push_back(k);
      }
      std::vector<size_t> order, head(queues.size(), 0);
      while (order.size() < mine.size()) {
        const size_t q = rng() % queues.size();
        if (head[q] < queues[q].size()) order.push_back(queues[q][head[q]++]);
      }
      std::vector<Step> steps;
      for (size_t o : order) {
        const Message& m = msgs[mine[o]];
        if (m.from == r) {
          steps.push_back(
              step(OpKind::kSend, BufRef::kInput, BufRef::kNone, m.to, -1, m.bytes, true));
          steps.back().srcOffset = m.at;
        } else {
          steps.push_back(
              step(OpKind::kRecv, BufRef::kNone, BufRef::kOutput, -1, m.from, m.bytes, true));
          steps.back().dstOffset = m.into;
        }
      }
      if (!steps.empty()) steps.back().batchWithNext = false;
      s.push_back(schedule(r, n, steps));
    }
    std::vector<SimRank> ranks(n);
    for (int r = 0; r < n; ++r) {
      for (uint64_t i = 0; i < in[r]; ++i)
        ranks[r].input.push_back(static_cast<uint8_t>(r * 40 + i));
      ranks[r].output.assign(out[r], 0xee);
    }
    const size_t slot = 1 + rng() % 16;
    Status st = runLowered(s, braidUint8, braidSum, ranks, slot);
    ASSERT_TRUE(st.isOk()) << "trial " << trial << ", slot " << slot << ": " << st.message();
    for (const Message& m : msgs) {
      for (uint64_t i = 0; i < m.bytes; ++i) {
        ASSERT_EQ(ranks[m.to].output[m.into + i], static_cast<uint8_t>(m.from * 40 + m.at + i))
            << "trial " << trial;
      }
    }
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
  EXPECT_EQ(fused.src[1].space, Space::kSlot);
  EXPECT_EQ(fused.src[1].from, 0);
  EXPECT_FALSE(fused.final);
  EXPECT_EQ(ops.value()[4].nsrcs, 1);
  EXPECT_TRUE(ops.value()[4].final);
}

}  // namespace
}  // namespace braid
