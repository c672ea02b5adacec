// The simulator's proof of schedule files (runtime/algorithm_proof.h): right programs
// pass for the rank counts they claim, and broken ones are refused before any call with
// the file, rank count, count, rank, step and fault named.
#include "runtime/algorithm_proof.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/user_algorithms.h"
#include "tests/common/file_programs.h"

namespace braid {
namespace {

using algo::BufRef;
using algo::OpKind;

std::string refusal(const algo::AlgoFile& f, int nranks) {
  const Status st = proveAlgorithm(f, nranks, "t.json");
  return st.isOk() ? "" : st.message();
}

TEST(AlgorithmProof, RingAndGridAllReducesAreProven) {
  for (auto [rows, cols] : {std::pair{1, 2}, {1, 3}, {2, 2}, {2, 3}, {2, 4}, {3, 3}}) {
    const algo::AlgoFile f = test::allReduceFile("grid", test::gridAllReduce(rows, cols));
    EXPECT_EQ(refusal(f, rows * cols), "") << rows << "x" << cols;
  }
}

// A dropped receive: the message its peer sent is never received.
TEST(AlgorithmProof, ADroppedReceiveIsRefusedNamingTheStep) {
  algo::AlgoFile f = test::allReduceFile("drop", test::gridAllReduce(1, 4));
  auto& steps = f.programs[0].ranks[2];
  steps.erase(steps.end() - 1);  // rank 2's last receive of the all-gather
  const std::string err = refusal(f, 4);
  EXPECT_NE(err.find("t.json: 4 ranks: count"), std::string::npos) << err;
  EXPECT_NE(err.find("never received"), std::string::npos) << err;
  EXPECT_NE(err.find("from rank 1 to rank 2"), std::string::npos) << err;  // its sender
}

// A receive into the wrong chunk: a message of another size where chunks differ in size,
// else wrong results, named by rank and step or element.
TEST(AlgorithmProof, AWrongChunkIndexIsRefused) {
  algo::AlgoFile f = test::allReduceFile("chunk", test::gridAllReduce(1, 4));
  for (algo::Step& s : f.programs[0].ranks[1]) {
    if (s.op == OpKind::kRecv) {
      s.dstOffset = (s.dstOffset + 1) % 4;
      break;
    }
  }
  const std::string err = refusal(f, 4);
  EXPECT_TRUE(err.find("wrong result: rank") != std::string::npos ||
              err.find("size mismatch: rank 1 step") != std::string::npos)
      << err;
}

// Every rank receives before it sends: a cycle of receives, a deadlock.
TEST(AlgorithmProof, ACycleOfReceivesIsRefusedAsADeadlock) {
  algo::AlgoFile f = test::allReduceFile("cycle", test::gridAllReduce(1, 3));
  for (auto& steps : f.programs[0].ranks) std::swap(steps[1], steps[2]);  // recv before send
  const std::string err = refusal(f, 3);
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("step 1"), std::string::npos) << err;
}

TEST(AlgorithmProof, ARankCountTheFileDoesNotClaimIsRefused) {
  const algo::AlgoFile f = test::allReduceFile("four", test::gridAllReduce(2, 2));
  const std::string err = refusal(f, 3);
  EXPECT_NE(err.find("does not support 3 ranks (it claims 4)"), std::string::npos) << err;
}

TEST(AlgorithmProof, SizesThatHoldNoCountAreRefused) {
  algo::AlgoFile f = test::allReduceFile("sizes", test::gridAllReduce(1, 2));
  f.sizes = algo::SizeRange{1, true, 3, true};  // no count of 4-byte elements
  const std::string err = refusal(f, 2);
  EXPECT_NE(err.find("hold no count of 4-byte elements"), std::string::npos) << err;
  f.sizes = algo::SizeRange{4096, true, 4096, true};  // one count: 1024
  EXPECT_EQ(proofCounts(f, 2), (std::vector<uint64_t>{1024}));
  EXPECT_EQ(refusal(f, 2), "");
}

// A reduction into scratch that was never written: the two fills disagree.
TEST(AlgorithmProof, AReadOfScratchBeforeItsWriteIsRefused) {
  algo::AlgoFile f = test::allReduceFile("scratch", test::gridAllReduce(1, 2));
  f.programs[0].scratchChunks = 2;
  for (auto& steps : f.programs[0].ranks) {
    // Reduce scratch (never written) into the output: its garbage is in the result.
    steps.push_back(
        test::fileStep(OpKind::kReduceLocal, BufRef::kScratch, 0, BufRef::kOutput, 0, 2));
  }
  EXPECT_NE(refusal(f, 2).find("wrong result"), std::string::npos);
}

// avg divides once, at the steps marked final: the ring's last reduction of each chunk.
TEST(AlgorithmProof, AvgIsProvenWhereItsDivisionIsMarkedOnce) {
  algo::AlgoFile f = test::allReduceFile("avg", test::gridAllReduce(1, 4));
  f.ops = {"sum", "avg"};
  std::string err = refusal(f, 4);  // nothing marked: sums where averages belong
  EXPECT_NE(err.find("avg: wrong result"), std::string::npos) << err;
  EXPECT_NE(err.find("\"final\""), std::string::npos) << err;
  for (auto& steps : f.programs[0].ranks) {
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      if (it->op != OpKind::kRecvReduce) continue;
      it->final = true;
      break;
    }
  }
  EXPECT_EQ(refusal(f, 4), "");
  for (auto& steps : f.programs[0].ranks) {
    for (algo::Step& s : steps) s.final = s.final || s.op == OpKind::kRecvReduce;
  }
  err = refusal(f, 4);  // every partial sum divided
  EXPECT_NE(err.find("avg: wrong result"), std::string::npos) << err;
  f.ops = {"sum"};  // avg not claimed: not proven, not served
  EXPECT_EQ(refusal(f, 4), "");
}

algo::AlgoFile windowAllGatherFile(int n) {
  algo::AlgoFile f = test::allReduceFile("wag", test::windowAllGather(n));
  f.collective = algo::Collective::kAllGather;
  return f;
}

TEST(AlgorithmProof, AWindowAllGatherIsProven) {
  for (int n : {2, 3, 4, 5}) EXPECT_EQ(refusal(windowAllGatherFile(n), n), "") << n;
}

// Rank 1 reads rank 0's window without waiting for its ready flag: a read before the
// peer's write, named by rank and file step.
TEST(AlgorithmProof, AWindowReadWithoutItsWaitIsRefusedNamingTheStep) {
  algo::AlgoFile f = windowAllGatherFile(3);
  auto& steps = f.programs[0].ranks[1];
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].op == OpKind::kWait && steps[i].recvPeer == 0) {
      steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  const std::string err = refusal(f, 3);
  EXPECT_NE(err.find("t.json: 3 ranks: count"), std::string::npos) << err;
  EXPECT_NE(err.find("race: rank 1"), std::string::npos) << err;
  EXPECT_NE(err.find("(file step 6)"), std::string::npos) << err;  // its copyPeer
  EXPECT_NE(err.find("a wait for its flag is missing"), std::string::npos) << err;
}

// A rank that lends its input but never signals finished: its peers may still read the
// input when it returns and the caller writes it (a write a peer may still read).
TEST(AlgorithmProof, AWindowProgramWithoutItsFinishedFlagIsRefused) {
  algo::AlgoFile f = windowAllGatherFile(2);
  for (auto& steps : f.programs[0].ranks) steps.pop_back();
  const std::string err = refusal(f, 2);
  EXPECT_NE(err.find("buffers lent"), std::string::npos) << err;
  EXPECT_NE(err.find("finished"), std::string::npos) << err;
}

TEST(AlgorithmProof, VerdictsAreCachedByContent) {
  const algo::AlgoFile f = test::allReduceFile("cached", test::gridAllReduce(2, 2));
  const std::string text = algo::writeAlgoFile(f);
  auto a = provenAlgorithm(text, 4);
  auto b = provenAlgorithm(text, 4);
  ASSERT_TRUE(a.isOk()) << a.status().message();
  ASSERT_TRUE(b.isOk()) << b.status().message();
  EXPECT_EQ(a.value().get(), b.value().get());  // one proof, one file
  EXPECT_FALSE(provenAlgorithm(text, 2).isOk());
}

}  // namespace
}  // namespace braid
