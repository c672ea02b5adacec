// Exchange and star algorithms (pairwise.h, linear.h) through the simulator
// and the collective checker: pairwise and Bruck all-to-all, pairwise
// all-to-all-v, Bruck all-gather, linear gather and scatter, for nranks 1..17,
// 32 and 64, counts around nranks, odd and large counts, steps cut to 1, 7 or
// 64k elements, FIFOs of one and two messages, in place and out of place,
// roots first, last and in the middle. Plus the shape each algorithm promises:
// the peers of each round, its number of messages, no step above maxStepElems.
#include "algorithms/pairwise/pairwise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "algorithms/linear/linear.h"
#include "coll_check.h"

namespace braid::test {
namespace {

using algo::Collective;
using algo::OpKind;

constexpr braidDataType_t kTypes[] = {braidInt8, braidFloat16, braidFloat32, braidInt64};

std::vector<uint64_t> countsFor(int n) {
  const uint64_t un = n;
  if (n > 17) return {1, un + 1, 257};
  std::vector<uint64_t> v = {0, 1, un - 1, un + 1, 257, 4099};
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<int> rootsFor(int n) {
  std::set<int> roots = {0, n - 1, n / 2};
  return {roots.begin(), roots.end()};
}

// Every combination worth running for `coll`, less those that cut many large
// blocks into small steps (other cases cover both), to keep the suite fast.
std::vector<CheckCase> casesFor(Collective coll, bool inPlaceToo, bool rooted) {
  std::vector<CheckCase> out;
  std::vector<int> ranks;
  for (int n = 1; n <= 17; ++n) ranks.push_back(n);
  ranks.push_back(32);
  ranks.push_back(64);
  int variant = 0;
  for (int n : ranks) {
    for (uint64_t count : countsFor(n)) {
      for (uint64_t maxStep : {uint64_t{1}, uint64_t{7}, uint64_t{1} << 16}) {
        // All-to-all moves n(n-1) blocks of `count`: skip the slowest cases.
        const uint64_t pieces = uint64_t(n) * (n - 1) * ((count + maxStep - 1) / maxStep);
        if (pieces > 60000) continue;
        for (bool inPlace : {false, true}) {
          if (inPlace && !inPlaceToo) continue;
          for (int root : rooted ? rootsFor(n) : std::vector<int>{0}) {
            CheckCase c;
            c.collective = coll;
            c.nranks = n;
            c.count = count;
            c.datatype = kTypes[variant % 4];
            c.root = root;
            c.inPlace = inPlace;
            c.maxStepElems = maxStep;
            c.fifoMessages = 1 + (variant / 4) % 2;
            ++variant;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

void checkAll(const ScheduleFn& fn, Collective coll, bool inPlaceToo, bool rooted) {
  int failures = 0;
  for (const CheckCase& c : casesFor(coll, inPlaceToo, rooted)) {
    const std::string why = checkCollective(fn, c);
    EXPECT_EQ(why, "") << c.describe();
    if (!why.empty() && ++failures == 5) return;  // enough to debug with
  }
}

algo::CollArgs argsFor(Collective coll, int rank, int n, uint64_t count, uint64_t maxStep,
                       bool inPlace = false) {
  algo::CollArgs a;
  a.collective = coll;
  a.rank = rank;
  a.nranks = n;
  a.count = count;
  a.maxStepElems = maxStep;
  a.inPlace = inPlace;
  return a;
}

// Peers of rank r's sends, in order, one entry per batch (or lone step).
std::vector<int> sendPeersByBatch(const algo::Schedule& s) {
  std::vector<int> peers;
  bool newBatch = true;
  for (const algo::Step& st : s.steps) {
    if (st.sendPeer >= 0 && newBatch) peers.push_back(st.sendPeer);
    if (st.sendPeer >= 0) newBatch = false;
    if (!st.batchWithNext) newBatch = true;
  }
  return peers;
}

TEST(PairwiseAllToAll, MatchesTheReference) {
  checkAll(algo::pairwiseAllToAll, Collective::kAllToAll, true, false);
}

TEST(BruckAllToAll, MatchesTheReference) {
  checkAll(algo::bruckAllToAll, Collective::kAllToAll, true, false);
}

TEST(BruckAllGather, MatchesTheReference) {
  checkAll(algo::bruckAllGather, Collective::kAllGather, true, false);
}

TEST(LinearGather, MatchesTheReference) {
  checkAll(algo::linearGather, Collective::kGather, true, true);
}

TEST(LinearScatter, MatchesTheReference) {
  checkAll(algo::linearScatter, Collective::kScatter, true, true);
}

TEST(PairwiseAllToAllv, RandomCountsWithZeros) {
  std::mt19937 rng(20240611);
  int failures = 0;
  for (int n : {1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 32}) {
    for (uint64_t maxStep : {uint64_t{1}, uint64_t{7}, uint64_t{1} << 16}) {
      for (bool inPlace : {false, true}) {  // in place: staged through scratch
        CheckCase c;
        c.collective = Collective::kAllToAllv;
        c.nranks = n;
        c.datatype = kTypes[(n + maxStep) % 4];
        c.inPlace = inPlace;
        c.maxStepElems = maxStep;
        c.fifoMessages = 1 + n % 2;
        const uint64_t most = maxStep == 1 ? 9 : 300;
        c.vcounts.assign(n, std::vector<uint64_t>(n));
        for (int src = 0; src < n; ++src) {
          for (int dst = 0; dst < n; ++dst) {
            // Rank 1 sends nothing, rank 2 receives nothing; a third of the
            // other pairs exchange nothing.
            const bool none = (n > 2 && (src == 1 || dst == 2)) || rng() % 3 == 0;
            c.vcounts[src][dst] = none ? 0 : rng() % most;
          }
        }
        const std::string why = checkCollective(algo::pairwiseAllToAllv, c);
        EXPECT_EQ(why, "") << c.describe();
        if (!why.empty() && ++failures == 5) return;
      }
    }
  }
}

TEST(PairwiseAllToAllv, InPlaceWhereReceivesOverwriteBlocksNotYetSent) {
  // The checker runs all-to-all-v out of place only, so alias here: each
  // rank's buffer holds its send blocks packed, and its receive blocks packed
  // over them with other sizes, so most receives overwrite unsent data.
  const int n = 4;
  const std::vector<std::vector<uint64_t>> counts = {
      {3, 0, 5, 2}, {4, 1, 0, 6}, {0, 7, 2, 3}, {5, 2, 4, 0}};  // [src][dst]
  auto packed = [](const std::vector<uint64_t>& c) {
    std::vector<uint64_t> d(c.size(), 0);
    for (size_t i = 1; i < c.size(); ++i) d[i] = d[i - 1] + c[i - 1];
    return d;
  };
  std::vector<algo::Schedule> scheds;
  std::vector<SimRank> ranks(n);
  std::vector<algo::CollArgs> args(n);
  for (int r = 0; r < n; ++r) {
    algo::CollArgs& a = args[r];
    a = argsFor(Collective::kAllToAllv, r, n, 0, 2, true);
    a.elemSize = 4;
    for (int p = 0; p < n; ++p) {
      a.sendCounts.push_back(counts[r][p]);
      a.recvCounts.push_back(counts[p][r]);
    }
    a.sendDispls = packed(a.sendCounts);
    a.recvDispls = packed(a.recvCounts);
    scheds.push_back(algo::pairwiseAllToAllv(a));
    uint64_t elems = 0;
    for (int p = 0; p < n; ++p) elems = std::max(elems, a.sendDispls[p] + a.sendCounts[p]);
    for (int p = 0; p < n; ++p) elems = std::max(elems, a.recvDispls[p] + a.recvCounts[p]);
    std::vector<int32_t> v(elems);
    for (uint64_t i = 0; i < elems; ++i) v[i] = 1000 * r + static_cast<int32_t>(i);
    ranks[r].output.resize(elems * 4);
    std::memcpy(ranks[r].output.data(), v.data(), elems * 4);
    ranks[r].inPlace = true;  // the input is the whole output
  }
  SimOptions opts;
  opts.fifoMessages = 1;
  Status st = simulate(scheds, braidInt32, braidSum, ranks, opts);
  ASSERT_TRUE(st.isOk()) << st.message();
  for (int r = 0; r < n; ++r) {
    for (int p = 0; p < n; ++p) {
      for (uint64_t i = 0; i < args[r].recvCounts[p]; ++i) {
        int32_t got;
        std::memcpy(&got, &ranks[r].output[(args[r].recvDispls[p] + i) * 4], 4);
        EXPECT_EQ(got, 1000 * p + static_cast<int32_t>(args[p].sendDispls[r] + i))
            << "rank " << r << " from " << p << " element " << i;
      }
    }
  }
}

TEST(PairwiseAllToAll, RoundKSendsToRankPlusKAndReceivesFromRankMinusK) {
  const int n = 6;
  for (int r = 0; r < n; ++r) {
    algo::Schedule s = algo::pairwiseAllToAll(argsFor(Collective::kAllToAll, r, n, 10, 4));
    std::vector<int> want;
    for (int k = 1; k < n; ++k) want.push_back((r + k) % n);
    EXPECT_EQ(sendPeersByBatch(s), want) << "rank " << r;
    for (const algo::Step& st : s.steps) {
      EXPECT_LE(st.count, st.op == OpKind::kCopy ? 10u : 4u);
      if (st.recvPeer < 0) continue;
      // A receive shares its batch with the send to r+k when it is from r-k.
      EXPECT_EQ(st.dstOffset / 10, static_cast<uint64_t>(st.recvPeer));
    }
  }
}

TEST(PairwiseAllToAll, InPlaceRoundsPairRanksAndMeetEveryPeerOnce) {
  for (int n : {2, 5, 6, 9, 16}) {
    // n odd: n rounds, rank r idles in round 2r mod n; n even: n-1 rounds.
    const int rounds = n % 2 == 1 ? n : n - 1;
    std::vector<std::vector<int>> partner(n);
    for (int r = 0; r < n; ++r) {
      algo::Schedule s = algo::pairwiseAllToAll(argsFor(Collective::kAllToAll, r, n, 3, 8, true));
      EXPECT_EQ(s.scratchElems, 3u);
      std::vector<int> peers = sendPeersByBatch(s);
      std::set<int> met(peers.begin(), peers.end());
      EXPECT_EQ(met.size(), static_cast<size_t>(n - 1)) << "n " << n << " rank " << r;
      EXPECT_EQ(met.count(r), 0u);
      ASSERT_EQ(peers.size(), static_cast<size_t>(n - 1));
      for (int k = 0, next = 0; k < rounds; ++k) {
        const bool idle = n % 2 == 1 && k == (2 * r) % n;
        partner[r].push_back(idle ? r : peers[next++]);
      }
    }
    // Each round is a matching: partners name each other.
    for (int k = 0; k < rounds; ++k) {
      for (int r = 0; r < n; ++r) EXPECT_EQ(partner[partner[r][k]][k], r) << "n " << n;
    }
  }
}

TEST(BruckAllToAll, SendsLog2MessagesToPowerOfTwoDistances) {
  for (int n : {2, 3, 8, 13, 64}) {
    algo::Schedule s = algo::bruckAllToAll(argsFor(Collective::kAllToAll, 1, n, 2, 1 << 16));
    std::vector<int> want;
    for (int d = 1; d < n; d *= 2) want.push_back((1 + d) % n);
    EXPECT_EQ(sendPeersByBatch(s), want) << "n " << n;
    size_t sends = 0;
    for (const algo::Step& st : s.steps) sends += st.op == OpKind::kSend;
    EXPECT_EQ(sends, want.size()) << "n " << n;  // one packed message per round
  }
  // Pieces: no message above maxStepElems.
  algo::Schedule s = algo::bruckAllToAll(argsFor(Collective::kAllToAll, 0, 13, 5, 3));
  for (const algo::Step& st : s.steps) {
    if (st.op != OpKind::kCopy) {
      EXPECT_LE(st.count, 3u);
    }
  }
}

TEST(BruckAllGather, SendsToRankMinusTwoToTheKWithoutScratch) {
  for (int n : {2, 5, 8, 17}) {
    for (bool inPlace : {false, true}) {
      algo::Schedule s =
          algo::bruckAllGather(argsFor(Collective::kAllGather, 3 % n, n, 4, 1 << 16, inPlace));
      std::vector<int> want;
      for (int d = 1; d < n; d *= 2) want.push_back(((3 % n) - d + n) % n);
      EXPECT_EQ(sendPeersByBatch(s), want) << "n " << n;
      EXPECT_EQ(s.scratchElems, 0u);
      size_t copies = 0;
      for (const algo::Step& st : s.steps) copies += st.op == OpKind::kCopy;
      EXPECT_EQ(copies, inPlace ? 0u : 1u);
    }
  }
}

TEST(Linear, RootExchangesWithEveryRankInOneBatch) {
  const int n = 7;
  const int root = 3;
  for (auto fn : {algo::linearGather, algo::linearScatter}) {
    for (bool inPlace : {false, true}) {
      algo::CollArgs a = argsFor(Collective::kGather, root, n, 10, 4, inPlace);
      a.root = root;
      algo::Schedule s = fn(a);
      std::set<int> peers;
      size_t batchEnds = 0;
      for (const algo::Step& st : s.steps) {
        if (st.op == OpKind::kCopy) continue;
        peers.insert(std::max(st.sendPeer, st.recvPeer));
        batchEnds += !st.batchWithNext;
        EXPECT_LE(st.count, 4u);
      }
      EXPECT_EQ(peers.size(), static_cast<size_t>(n - 1));
      EXPECT_EQ(batchEnds, 1u);
      EXPECT_EQ(s.steps.size(), (n - 1) * 3u + (inPlace ? 0 : 1));
      // A non-root rank only talks to the root.
      a.rank = 0;
      for (const algo::Step& st : fn(a).steps) EXPECT_EQ(std::max(st.sendPeer, st.recvPeer), root);
    }
  }
}

}  // namespace
}  // namespace braid::test
