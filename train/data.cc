#include "train/data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "train/rng.h"

namespace braid::train {

namespace {

constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

bool appendFile(const std::filesystem::path& p, std::vector<uint8_t>* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out->insert(out->end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

std::string Corpus::load(const std::string& path, int seq) {
  namespace fs = std::filesystem;
  bytes_.clear();
  if (!path.empty()) {
    if (!appendFile(path, &bytes_)) return "cannot read --data " + path;
    source_ = path;
  } else {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(kFortunesDir, ec)) {
      if (!e.is_regular_file() || e.is_symlink() || e.path().extension() == ".dat") continue;
      files.push_back(e.path());
    }
    if (ec || files.empty()) {
      return std::string("no training text: the fortunes corpus (") + kFortunesDir +
             ") is missing; install the Debian package 'fortunes' (bash scripts/setup.sh) or "
             "pass --data FILE";
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) appendFile(f, &bytes_);
    source_ = std::string(kFortunesDir) + " (" + std::to_string(files.size()) + " files)";
  }
  if (bytes_.size() < static_cast<size_t>(seq) + 2) {
    return "the training text " + source_ + " has " + std::to_string(bytes_.size()) +
           " bytes; it needs more than the sequence length " + std::to_string(seq) + " + 1";
  }
  return "";
}

void Corpus::batch(uint64_t seed, int step, int globalBatch, int first, int count, int seq,
                   std::vector<int32_t>* tokens, std::vector<int32_t>* targets) const {
  tokens->resize(static_cast<size_t>(count) * seq);
  targets->resize(static_cast<size_t>(count) * seq);
  const uint64_t span = bytes_.size() - seq - 1;
  for (int j = 0; j < count; ++j) {
    const uint64_t index = static_cast<uint64_t>(step) * globalBatch + first + j;
    const size_t start = mixPair(seed, index) % span;
    for (int t = 0; t < seq; ++t) {
      (*tokens)[j * seq + t] = bytes_[start + t];
      (*targets)[j * seq + t] = bytes_[start + t + 1];
    }
  }
}

}  // namespace braid::train
