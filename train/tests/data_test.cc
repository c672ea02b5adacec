// The corpus and the batches: any slice of step k's global batch equals the
// same rows of the whole batch, and batches depend on (seed, step) only.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "train/data.h"

namespace braid::train {
namespace {

class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/braid-corpus-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/text.txt";
    std::ofstream out(path_);
    for (int i = 0; i < 500; ++i) out << "line " << i << ": the quick brown fox\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, path_;
};

TEST_F(CorpusTest, SlicesOfAStepAreRowsOfTheWholeBatch) {
  Corpus c;
  ASSERT_EQ(c.load(path_, 16), "");
  std::vector<int32_t> all, allT, part, partT;
  c.batch(9, 3, 8, 0, 8, 16, &all, &allT);
  for (int first = 0; first < 8; first += 2) {
    c.batch(9, 3, 8, first, 2, 16, &part, &partT);
    for (int i = 0; i < 2 * 16; ++i) {
      EXPECT_EQ(part[i], all[first * 16 + i]);
      EXPECT_EQ(partT[i], allT[first * 16 + i]);
    }
  }
  // Targets are the next byte of the text.
  std::ifstream in(path_, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t start = text.find(std::string(all.begin(), all.begin() + 16));
  ASSERT_NE(start, std::string::npos);
  for (int t = 0; t < 16; ++t) EXPECT_EQ(allT[t], static_cast<unsigned char>(text[start + t + 1]));
}

TEST_F(CorpusTest, BatchesDependOnSeedAndStepOnly) {
  Corpus a, b;
  ASSERT_EQ(a.load(path_, 16), "");
  ASSERT_EQ(b.load(path_, 16), "");
  std::vector<int32_t> x, y, t;
  a.batch(1, 5, 4, 0, 4, 16, &x, &t);
  b.batch(1, 5, 4, 0, 4, 16, &y, &t);
  EXPECT_EQ(x, y);
  b.batch(1, 6, 4, 0, 4, 16, &y, &t);
  EXPECT_NE(x, y);
  b.batch(2, 5, 4, 0, 4, 16, &y, &t);
  EXPECT_NE(x, y);
}

TEST_F(CorpusTest, MissingOrShortTextIsAnError) {
  Corpus c;
  EXPECT_NE(c.load(dir_ + "/none.txt", 16).find("cannot read --data"), std::string::npos);
  std::ofstream(dir_ + "/short.txt") << "tiny";
  EXPECT_NE(c.load(dir_ + "/short.txt", 16).find("needs more than the sequence length"),
            std::string::npos);
}

}  // namespace
}  // namespace braid::train
