// MSCCL's XML read as schedule files (algorithms/file/msccl_xml.h): every step type maps to
// its Braid op with its peers, buffers and chunks; programs built of them are proven exact
// by the simulator; in place, MSCCL's input names Braid's output; thread blocks become
// batches per round; and every refusal names the line, gpu, thread block and step.
#include "algorithms/file/msccl_xml.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/file/xml.h"
#include "runtime/algorithm_proof.h"

namespace braid::algo {
namespace {

std::string step(int s, const std::string& type, const std::string& sb, int so,
                 const std::string& db, int dof, int cnt = 1, int depid = -1, int deps = -1) {
  return "<step s=\"" + std::to_string(s) + "\" type=\"" + type + "\" srcbuf=\"" + sb +
         "\" srcoff=\"" + std::to_string(so) + "\" dstbuf=\"" + db + "\" dstoff=\"" +
         std::to_string(dof) + "\" cnt=\"" + std::to_string(cnt) + "\" depid=\"" +
         std::to_string(depid) + "\" deps=\"" + std::to_string(deps) + "\" hasdep=\"0\"/>\n";
}

std::string tb(int id, int send, int recv, const std::string& steps, int chan = 0) {
  return "<tb id=\"" + std::to_string(id) + "\" send=\"" + std::to_string(send) + "\" recv=\"" +
         std::to_string(recv) + "\" chan=\"" + std::to_string(chan) + "\">\n" + steps + "</tb>\n";
}

std::string gpu(int id, int i, int o, int s, const std::string& tbs) {
  return "<gpu id=\"" + std::to_string(id) + "\" i_chunks=\"" + std::to_string(i) +
         "\" o_chunks=\"" + std::to_string(o) + "\" s_chunks=\"" + std::to_string(s) + "\">\n" +
         tbs + "</gpu>\n";
}

std::string algo(const std::string& attrs, const std::string& gpus) {
  return "<?xml version=\"1.0\"?>\n<!-- a test -->\n<algo name=\"t x\" proto=\"Simple\" " + attrs +
         ">\n" + gpus + "</algo>\n";
}

const std::string kAllReduce2 =
    "nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" coll=\"allreduce\" inplace=\"0\"";

std::string refusal(const std::string& text) {
  Expected<AlgoFile> f = parseMscclXml(text);
  return f.isOk() ? "" : f.status().message();
}

std::string proof(const std::string& text, int nranks) {
  Expected<AlgoFile> f = parseAlgoFile(text);  // XML is recognised by its '<'
  if (!f.isOk()) return "read: " + f.status().message();
  const Status st = proveAlgorithm(f.value(), nranks, "t.xml");
  return st.isOk() ? "" : st.message();
}

// Three gpus in a chain 0 -> 1 -> 2 use every step type once or more.
TEST(MscclXml, EveryStepTypeMapsToItsBraidOp) {
  const std::string text = algo(
      "nchunksperloop=\"4\" ngpus=\"3\" coll=\"allreduce\" inplace=\"0\" minBytes=\"8\" "
      "maxBytes=\"4096\" redop=\"max\"",
      gpu(0, 4, 4, 0,
          tb(0, 1, -1, step(0, "s", "i", 0, "o", 0) + step(1, "s", "i", 2, "o", 0, 2))) +
          gpu(1, 4, 4, 2,
              tb(0, 2, 0, step(0, "rcs", "i", 0, "s", 1) + step(1, "rrs", "i", 2, "o", 0, 2))) +
          gpu(2, 4, 4, 1,
              tb(0, -1, 1, step(0, "r", "i", 0, "o", 0) + step(1, "rrc", "i", 2, "o", 2, 2)) +
                  tb(1, -1, -1,
                     step(0, "nop", "i", -1, "o", -1, 0, 0, 0) + step(1, "cpy", "o", 0, "s", 0) +
                         step(2, "re", "s", 0, "o", 0))));
  Expected<AlgoFile> r = parseMscclXml(text);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  const AlgoFile& f = r.value();
  EXPECT_EQ(f.name, "t_x");
  EXPECT_EQ(f.collective, Collective::kAllReduce);
  EXPECT_EQ(f.nranks, std::vector<int>{3});
  EXPECT_EQ(f.sizes.describe(), "[8, 4096) bytes");
  EXPECT_TRUE(f.outOfPlace);
  EXPECT_FALSE(f.inPlace);
  EXPECT_EQ(f.ops, std::vector<std::string>{"max"});
  ASSERT_EQ(f.programs.size(), 1u);
  const FileProgram& p = f.programs[0];
  EXPECT_EQ(p.chunksPerBlock, 4u);
  // Scratch lies in blocks, each chunk at its data's place: gpu 1's scratch chunk 1 holds
  // gpu 0's input chunk 0, so it lies at place 0 of a block of 4 chunks.
  EXPECT_EQ(p.scratchChunks, 4u);
  const auto& g0 = p.ranks[0];
  ASSERT_EQ(g0.size(), 2u);
  EXPECT_EQ(g0[0].op, OpKind::kSend);
  EXPECT_EQ(g0[0].src, BufRef::kInput);
  EXPECT_EQ(g0[0].srcOffset, 0u);
  EXPECT_EQ(g0[0].sendPeer, 1);
  EXPECT_EQ(g0[1].count, 2u);
  const auto& g1 = p.ranks[1];
  ASSERT_EQ(g1.size(), 2u);
  EXPECT_EQ(g1[0].op, OpKind::kRecvCopySend);  // rcs: dst = recv, sent on
  EXPECT_EQ(g1[0].dst, BufRef::kScratch);
  EXPECT_EQ(g1[0].dstOffset, 0u);  // MSCCL's scratch chunk 1, alone at place 0
  EXPECT_EQ(g1[0].recvPeer, 0);
  EXPECT_EQ(g1[0].sendPeer, 2);
  EXPECT_EQ(g1[1].op, OpKind::kRecvReduceSend);  // rrs: send(src op recv)
  EXPECT_EQ(g1[1].src, BufRef::kInput);
  EXPECT_EQ(g1[1].srcOffset, 2u);
  EXPECT_EQ(g1[1].count, 2u);
  const auto& g2 = p.ranks[2];
  ASSERT_EQ(g2.size(), 4u);  // the nop leaves no step
  EXPECT_EQ(g2[0].op, OpKind::kRecv);
  EXPECT_EQ(g2[0].dst, BufRef::kOutput);
  EXPECT_EQ(g2[0].dstOffset, 0u);
  EXPECT_EQ(g2[1].op, OpKind::kRecvReduce);  // rrc: dst = src op recv
  EXPECT_EQ(g2[1].src, BufRef::kInput);
  EXPECT_EQ(g2[1].dst, BufRef::kOutput);
  EXPECT_EQ(g2[2].op, OpKind::kCopy);  // waited, through the nop, for the first receive
  EXPECT_EQ(g2[2].src, BufRef::kOutput);
  EXPECT_EQ(g2[2].dst, BufRef::kScratch);
  EXPECT_EQ(g2[3].op, OpKind::kReduceLocal);  // re: dst = dst op src
  EXPECT_EQ(g2[3].src, BufRef::kScratch);
  EXPECT_EQ(g2[3].dst, BufRef::kOutput);
  // Rounds: gpu 2's second receive and its copy ran in the same round, one batch.
  EXPECT_FALSE(g2[0].batchWithNext);
  EXPECT_TRUE(g2[1].batchWithNext);
  EXPECT_FALSE(g2[2].batchWithNext);
}

// rrcs: dst = src op recv, and sent on; re and cpy with a dependency across thread blocks.
TEST(MscclXml, FusedAndLocalStepsAreProvenExact) {
  // Each gpu sends its input, receives its peer's into scratch in one thread block; the
  // other copies its input to the output and, after the receive, adds the scratch in.
  std::string gpus;
  for (int r = 0; r < 2; ++r) {
    gpus +=
        gpu(r, 2, 2, 2,
            tb(0, 1 - r, 1 - r, step(0, "s", "i", 0, "o", 0, 2) + step(1, "r", "i", 0, "s", 0, 2)) +
                tb(1, -1, -1,
                   step(0, "cpy", "i", 0, "o", 0, 2) + step(1, "nop", "i", -1, "o", -1, 0, 0, 1) +
                       step(2, "re", "s", 0, "o", 0, 2)));
  }
  EXPECT_EQ(proof(algo(kAllReduce2, gpus), 2), "");
  // A reduction along a chain 0 -> 1 -> 2 and back with rrcs in the middle.
  const std::string chain = algo(
      "nchunksperloop=\"1\" ngpus=\"3\" coll=\"allreduce\" inplace=\"0\"",
      gpu(0, 1, 1, 0, tb(0, 1, 1, step(0, "s", "i", 0, "o", 0) + step(1, "r", "i", 0, "o", 0))) +
          gpu(1, 1, 1, 0,
              tb(0, 2, 0, step(0, "rrs", "i", 0, "o", 0)) +
                  tb(1, 0, 2, step(0, "rcs", "i", 0, "o", 0))) +
          gpu(2, 1, 1, 0, tb(0, 1, 1, step(0, "rrcs", "i", 0, "o", 0))));
  EXPECT_EQ(proof(chain, 3), "");
  // The same with rrc where rrcs was: gpu 2 keeps the sum and sends nothing back.
  std::string broken = chain;
  broken.replace(broken.find("rrcs"), 4, "rrc");
  const std::string err = proof(broken, 3);
  EXPECT_NE(err.find("gpu 1, tb 1, step 0 (rcs) waits for a message from gpu 2"), std::string::npos)
      << err;
}

// A ring all-reduce over two channels, in place, as msccl-tools writes it: proven.
TEST(MscclXml, AnInPlaceTwoChannelRingIsProven) {
  const int n = 4;
  std::string gpus;
  for (int r = 0; r < n; ++r) {
    std::string tbs;
    for (int c = 0; c < 2; ++c) {
      std::vector<std::pair<std::string, int>> s = {{"s", r}};
      for (int k = 1; k < n - 1; ++k) s.push_back({"rrs", (r - k + n) % n});
      s.push_back({"rrcs", (r + 1) % n});
      for (int j = 1; j < n - 1; ++j) s.push_back({"rcs", (r + 1 - j + n) % n});
      s.push_back({"r", (r + 2) % n});
      std::string steps;
      for (size_t i = 0; i < s.size(); ++i) {
        steps += step(static_cast<int>(i), s[i].first, "i", c * n + s[i].second, "i",
                      c * n + s[i].second);
      }
      tbs += tb(c, (r + 1) % n, (r + n - 1) % n, steps, c);
    }
    gpus += gpu(r, 2 * n, 0, 0, tbs);
  }
  const std::string text = algo(
      "nchunksperloop=\"8\" ngpus=\"4\" coll=\"allreduce\" inplace=\"1\" outofplace=\"0\"", gpus);
  Expected<AlgoFile> f = parseMscclXml(text);
  ASSERT_TRUE(f.isOk()) << f.status().message();
  EXPECT_TRUE(f.value().inPlace);
  EXPECT_FALSE(f.value().outOfPlace);
  EXPECT_EQ(f.value().programs[0].ranks[0][0].src, BufRef::kOutput);  // in place: one buffer
  EXPECT_EQ(proof(text, 4), "");
}

// MSCCL's all-pairs all-reduce (one thread block per peer, one that reduces): every
// gpu sends chunk p to gpu p's scratch, reduces what it received into its own chunk after
// each receive (depid/deps, and nops for a second dependency), then sends the sum to all.
TEST(MscclXml, AnAllPairsAllReduceWithDependenciesIsProven) {
  const int n = 4;
  std::string gpus;
  for (int r = 0; r < n; ++r) {
    std::string tbs;
    const int reducer = n - 1;  // the thread block ids 0..n-2 serve the peers
    std::vector<int> peers;
    for (int p = 0; p < n; ++p) {
      if (p != r) peers.push_back(p);
    }
    for (int t = 0; t < n - 1; ++t) {
      const int p = peers[t];
      tbs += tb(t, p, p,
                step(0, "s", "i", p, "s", t) + step(1, "r", "i", r, "s", t) +
                    step(2, "nop", "i", -1, "o", -1, 0, reducer, n - 2) +
                    step(3, "s", "i", r, "i", r, 1, reducer, n - 2) + step(4, "r", "i", p, "i", p));
    }
    std::string re;
    for (int t = 0; t < n - 1; ++t) re += step(t, "re", "s", t, "i", r, 1, t, 1);
    tbs += tb(reducer, -1, -1, re);
    gpus += gpu(r, n, 0, n - 1, tbs);
  }
  const std::string text =
      algo("nchunksperloop=\"4\" ngpus=\"4\" coll=\"allreduce\" inplace=\"1\"", gpus);
  EXPECT_EQ(proof(text, n), "");
  // Without the dependency of the reduction on the receive, the proof finds the race.
  std::string racy = text;
  const std::string dep =
      "type=\"re\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" "
      "cnt=\"1\" depid=\"0\" deps=\"1\"";
  ASSERT_NE(racy.find(dep), std::string::npos);
  racy.replace(racy.find(dep), dep.size(),
               "type=\"re\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "
               "depid=\"-1\" deps=\"-1\"");
  EXPECT_NE(proof(racy, n), "");
}

// Out of place, a program that reduces into its input (as MSCCLang programs often do)
// works on a copy of the input in scratch, made by a first step.
TEST(MscclXml, AnOutOfPlaceProgramThatWritesItsInputWorksOnACopy) {
  std::string gpus;
  for (int r = 0; r < 2; ++r) {
    gpus += gpu(r, 2, 2, 2,
                tb(0, 1 - r, 1 - r,
                   step(0, "s", "i", 0, "s", 0, 2) + step(1, "r", "i", 0, "s", 0, 2) +
                       step(2, "re", "s", 0, "i", 0, 2) + step(3, "cpy", "i", 0, "o", 0, 2)));
  }
  const std::string text = algo(kAllReduce2, gpus);
  Expected<AlgoFile> f = parseMscclXml(text);
  ASSERT_TRUE(f.isOk()) << f.status().message();
  const std::vector<Step>& steps = f.value().programs[0].ranks[0];
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].op, OpKind::kCopy);
  EXPECT_EQ(steps[0].src, BufRef::kInput);
  EXPECT_EQ(steps[0].dst, BufRef::kScratch);
  EXPECT_EQ(steps[0].count, 2u);
  EXPECT_EQ(steps[1].src, BufRef::kScratch);           // MSCCL's i, the copy
  EXPECT_EQ(f.value().programs[0].scratchChunks, 4u);  // the copy's block, then s's
  EXPECT_EQ(proof(text, 2), "");
}

// In place, an all-gather's input is block r of its output.
TEST(MscclXml, AnInPlaceAllGatherReadsItsInputInsideTheOutput) {
  std::string gpus;
  for (int r = 0; r < 2; ++r) {
    gpus +=
        gpu(r, 1, 2, 0,
            tb(0, 1 - r, 1 - r, step(0, "s", "i", 0, "o", r) + step(1, "r", "i", 0, "o", 1 - r)));
  }
  const std::string text =
      algo("nchunksperloop=\"2\" ngpus=\"2\" coll=\"allgather\" inplace=\"1\"", gpus);
  Expected<AlgoFile> f = parseMscclXml(text);
  ASSERT_TRUE(f.isOk()) << f.status().message();
  EXPECT_EQ(f.value().programs[0].ranks[1][0].src, BufRef::kOutput);
  EXPECT_EQ(f.value().programs[0].ranks[1][0].srcOffset, 1u);
  EXPECT_EQ(proof(text, 2), "");
}

void expectRefused(const std::string& text, const std::vector<std::string>& parts) {
  const std::string err = refusal(text);
  ASSERT_NE(err, "");
  for (const std::string& p : parts) EXPECT_NE(err.find(p), std::string::npos) << err;
}

std::string pairProgram(const std::string& step0, const std::string& step1,
                        const std::string& attrs = kAllReduce2, int send = 1) {
  return algo(attrs, gpu(0, 2, 2, 1, tb(0, send, 1, step0)) + gpu(1, 2, 2, 1, tb(0, 0, 0, step1)));
}

TEST(MscclXml, MaxBytesZeroMeansNoBound) {
  Expected<AlgoFile> f =
      parseMscclXml(pairProgram(step(0, "s", "i", 0, "o", 0), step(0, "r", "i", 0, "o", 0),
                                kAllReduce2 + " minBytes=\"0\" maxBytes=\"0\""));
  ASSERT_TRUE(f.isOk()) << f.status().message();
  EXPECT_EQ(f.value().sizes.describe(), "[0, inf] bytes");
}

TEST(MscclXml, MalformedXmlAndHeadersAreRefused) {
  expectRefused("<algo name=\"x\"", {"line 1", "unterminated tag"});
  expectRefused("<algo name=\"x\">\n<gpu>\n</algo>", {"line 3", "closes <gpu>"});
  expectRefused("<algo name=x/>", {"must be quoted"});
  expectRefused("<flow/>", {"not MSCCL's <algo>"});
  expectRefused("<algo name=\"x\">text</algo>", {"text inside <algo>"});
  expectRefused(algo("ngpus=\"2\" nchunksperloop=\"1\" coll=\"broadcast\"", ""),
                {"coll=\"broadcast\"", "allreduce, allgather"});
  expectRefused(algo("ngpus=\"2\" nchunksperloop=\"3\" coll=\"alltoall\"", ""),
                {"nchunksperloop=\"3\" is not a multiple of the 2 blocks"});
  expectRefused(algo("ngpus=\"2\" nchunksperloop=\"1\" coll=\"allreduce\" scale=\"2\"", ""),
                {"attribute scale has no meaning"});
  expectRefused(algo(kAllReduce2 + " minBytes=\"64\" maxBytes=\"64\"", ""), {"contain no size"});
  expectRefused(algo(kAllReduce2 + " redop=\"avg\"", ""), {"redop=\"avg\""});
  expectRefused(algo(kAllReduce2, gpu(0, 2, 2, 0, "")), {"gpu 1 is missing"});
  expectRefused(algo("ngpus=\"x\" nchunksperloop=\"1\" coll=\"allreduce\"", ""),
                {"ngpus=\"x\" is not an integer"});
}

TEST(MscclXml, StepsWithoutMeaningInBraidAreRefusedNamingTheStep) {
  const std::string ok = step(0, "s", "i", 0, "o", 0);
  const std::string rx = step(0, "r", "i", 0, "o", 0);
  expectRefused(pairProgram(step(0, "put", "i", 0, "o", 0), rx),
                {"gpu 0, tb 0, step 0", "step type 'put' has no meaning in Braid"});
  expectRefused(pairProgram(ok, rx, kAllReduce2, -1), {"gpu 0, tb 0, step 0", "send=-1"});
  expectRefused(pairProgram(ok,
                            "<step s=\"0\" type=\"r\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
                            "prio=\"1\"/>"),
                {"gpu 1, tb 0, step 0", "attribute prio has no meaning"});
  expectRefused(pairProgram(step(0, "s", "i", 1, "o", 0, 2), rx),
                {"gpu 0, tb 0, step 0", "i chunks [1, 3) lie outside the gpu's i_chunks=2"});
  expectRefused(pairProgram(ok, step(0, "r", "i", 0, "i", 0),
                            "nchunksperloop=\"2\" ngpus=\"2\" coll=\"reduce_scatter\" "
                            "inplace=\"1\""),
                {"gpu 1, tb 0, step 0", "writes input chunks outside rank 1's own block"});
  expectRefused(pairProgram(ok, step(0, "r", "i", 0, "x", 0)), {"buffer 'x' is not i, o or s"});
  expectRefused(pairProgram(ok, step(0, "r", "i", 0, "o", 0, 1, 3, 0)),
                {"gpu 1, tb 0, step 0: depends on gpu 1, tb 3, step 0, which the file lacks"});
  expectRefused(pairProgram(step(1, "s", "i", 0, "o", 0), rx), {"s=\"1\", but it is step 0"});
  expectRefused(pairProgram(ok, "<step s=\"0\" type=\"r\" dstbuf=\"o\" dstoff=\"0\" cnt=\"-2\"/>"),
                {"gpu 1, tb 0, step 0: <step> cnt=\"-2\" is not an integer"});
  expectRefused(algo(kAllReduce2, gpu(0, 2, 2, 0, tb(0, 0, -1, ok)) + gpu(1, 2, 2, 0, "")),
                {"gpu 0, tb 0", "its own gpu"});
}

TEST(MscclXml, ProgramsNoOrderCompletesAreRefusedNamingTheStep) {
  const std::string ok = step(0, "s", "i", 0, "o", 0);
  expectRefused(pairProgram(ok, step(0, "r", "i", 0, "o", 0, 2)),
                {"gpu 1, tb 0, step 0: receives 2 chunks", "gpu 0, tb 0, step 0", "holds 1"});
  expectRefused(pairProgram("", step(0, "r", "i", 0, "o", 0)),
                {"gpu 1, tb 0, step 0 (r) waits for a message from gpu 0", "never sent"});
  expectRefused(pairProgram(ok, ""), {"gpu 0, tb 0, step 0: sends to gpu 1", "no step"});
  // Two channels between the same pair, received in the other order.
  const std::string crossed =
      algo(kAllReduce2, gpu(0, 2, 2, 0, tb(0, 1, -1, ok, 0) + tb(1, 1, -1, ok, 1)) +
                            gpu(1, 2, 2, 0,
                                tb(0, -1, 0, step(0, "r", "i", 0, "o", 0, 1, 1, 0), 0) +
                                    tb(1, -1, 0, step(0, "r", "i", 0, "o", 1), 1)));
  expectRefused(crossed, {"gpu 1, tb 1, step 0 (r) receives on channel 1",
                          "is gpu 0, tb 0, step 0's on channel 0", "one per channel"});
  // A cycle of dependencies.
  const std::string cycle =
      algo(kAllReduce2, gpu(0, 2, 2, 0,
                            tb(0, -1, -1, step(0, "cpy", "i", 0, "o", 0, 1, 1, 0)) +
                                tb(1, -1, -1, step(0, "cpy", "i", 1, "o", 1, 1, 0, 0))) +
                            gpu(1, 2, 2, 0, ""));
  expectRefused(cycle, {"gpu 0, tb 0, step 0 (cpy) waits for gpu 0, tb 1, step 0"});
  // A message from chunk 0 into chunk 1: chunks of two places differ in size.
  expectRefused(pairProgram(ok, step(0, "r", "i", 0, "o", 1)),
                {"gpu 1, tb 0, step 0: it moves data between places 0 and 1 of their blocks"});
  // A scratch chunk that holds data of place 0, then of place 1.
  expectRefused(pairProgram(ok + step(1, "s", "i", 1, "o", 0),
                            step(0, "r", "i", 0, "s", 0) + step(1, "r", "i", 0, "s", 0)),
                {"gpu 1, tb 0, step 1: it moves data between places 1 and 0"});
}

TEST(MscclXml, TheTokenizerReadsEntitiesAndRefusesUnknownOnes) {
  Expected<XmlElement> e = parseXml("<a b='x &lt;&amp; y'><c/><!-- c --></a>");
  ASSERT_TRUE(e.isOk()) << e.status().message();
  EXPECT_EQ(*e.value().attr("b"), "x <& y");
  EXPECT_EQ(e.value().children.size(), 1u);
  EXPECT_FALSE(parseXml("<a b=\"&nbsp;\"/>").isOk());
  EXPECT_FALSE(parseXml("<a b=\"1\" b=\"2\"/>").isOk());
  EXPECT_FALSE(parseXml("<!DOCTYPE a><a/>").isOk());
  EXPECT_FALSE(parseXml("<a/><b/>").isOk());
  EXPECT_TRUE(looksLikeXml("  \n<algo/>"));
  EXPECT_TRUE(looksLikeXml("\xEF\xBB\xBF<algo/>"));
  EXPECT_TRUE(parseXml("\xEF\xBB\xBF<a/>").isOk());
  EXPECT_FALSE(looksLikeXml("{\"format\": 1}"));
}

}  // namespace
}  // namespace braid::algo
