// braidCommRegisterAlgorithm (include/braid/braid.h): bad arguments and files that the
// simulator cannot prove are refused naming why, with no side effect; a proven file is
// named by braidCommGetAlgorithm where BRAID_ALGO asks for it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "braid/braid.h"

namespace {

// A one-rank all-reduce: copy the input to the output.
const char* kCopy =
    "{\"format\": \"braid-schedule\", \"version\": 1, \"name\": \"copy1\", \"collective\": "
    "\"allreduce\", \"ranks\": [1], \"programs\": [{\"nranks\": 1, \"ranks\": [[{\"op\": "
    "\"copy\", \"src\": \"input\", \"srcChunk\": 0, \"dst\": \"output\", \"dstChunk\": 0}]]}]}";

braidComm_t oneRank() {
  braidUniqueId id;
  braidComm_t comm = nullptr;
  if (braidGetUniqueId(&id) != braidSuccess) return nullptr;
  if (braidCommInitRank(&comm, 1, id, 0) != braidSuccess) return nullptr;
  return comm;
}

TEST(RegisterAlgorithm, RefusesWhatItCannotProveAndNamesAProvenOne) {
  setenv("BRAID_ALGO", "allreduce:copy1", 1);
  braidComm_t comm = oneRank();
  unsetenv("BRAID_ALGO");
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(braidCommRegisterAlgorithm(comm, nullptr), braidInvalidArgument);
  EXPECT_EQ(braidCommRegisterAlgorithm(comm, "/nonexistent/issue-47.json"), braidSystemError);
  EXPECT_NE(std::string(braidGetLastError(comm)).find("/nonexistent/issue-47.json"),
            std::string::npos);
  // Before registration, BRAID_ALGO names nothing loaded: an error naming the variables.
  const char* name = nullptr;
  EXPECT_EQ(braidCommGetAlgorithm(comm, braidCollAllReduce, 16, braidFloat32, &name, nullptr),
            braidInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(comm)).find("BRAID_ALGO_FILES"), std::string::npos);
  // A file for two ranks only.
  std::string two = kCopy;
  two.replace(two.find("[1]"), 3, "[2]");
  EXPECT_EQ(braidCommRegisterAlgorithm(comm, two.c_str()), braidInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(comm)).find("program for 1 ranks"), std::string::npos)
      << braidGetLastError(comm);
  ASSERT_EQ(braidCommRegisterAlgorithm(comm, kCopy), braidSuccess) << braidGetLastError(comm);
  ASSERT_EQ(braidCommGetAlgorithm(comm, braidCollAllReduce, 16, braidFloat32, &name, nullptr),
            braidSuccess);
  EXPECT_STREQ(name, "copy1");
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  ASSERT_EQ(braidAllReduce(in, out, 4, braidFloat32, braidSum, comm, nullptr), braidSuccess);
  EXPECT_EQ(out[3], 4.0f);
  EXPECT_EQ(braidCommDestroy(comm), braidSuccess);
}

// MSCCL's XML given as text (it starts with '<'): the same copy, then an MSCCL++ step type,
// refused naming where it is.
TEST(RegisterAlgorithm, ReadsMscclXmlText) {
  braidComm_t comm = oneRank();
  ASSERT_NE(comm, nullptr);
  const std::string xml =
      "<algo name=\"mcopy\" ngpus=\"1\" nchunksperloop=\"1\" coll=\"allreduce\" "
      "outofplace=\"1\">\n<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\">\n"
      "<tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n<step s=\"0\" type=\"cpy\" "
      "srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\"/>\n</tb></gpu></algo>";
  ASSERT_EQ(braidCommRegisterAlgorithm(comm, xml.c_str()), braidSuccess) << braidGetLastError(comm);
  std::string put = xml;
  put.replace(put.find("cpy"), 3, "put");
  EXPECT_EQ(braidCommRegisterAlgorithm(comm, put.c_str()), braidInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(comm))
                .find("<XML text>: line 4: gpu 0, tb 0, step 0: step type 'put'"),
            std::string::npos)
      << braidGetLastError(comm);
  EXPECT_EQ(braidCommDestroy(comm), braidSuccess);
}

}  // namespace
