#include "runtime/user_algorithms.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/env.h"
#include "core/logging.h"
#include "exec/reduce.h"
#include "runtime/algorithm_proof.h"
#include "runtime/communicator.h"
#include "runtime/host_calls.h"

namespace braid {
namespace {

// FNV-1a, 64 bits: a content's identity for the cache and the ranks' comparison.
uint64_t contentHash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

struct Verdicts {
  std::mutex mu;
  // (hash, nranks) -> the proven file, or the refusal.
  std::map<std::pair<uint64_t, int>, Expected<std::shared_ptr<const algo::AlgoFile>>> byContent;
};

Verdicts& verdicts() {
  static Verdicts* v = new Verdicts();  // outlives every communicator
  return *v;
}

Expected<std::string> readText(const std::string& pathOrJson) {
  if (!pathOrJson.empty() && (pathOrJson[0] == '{' || pathOrJson[0] == '<')) return pathOrJson;
  std::ifstream in(pathOrJson, std::ios::binary);
  if (!in) return systemError("cannot read the schedule file " + pathOrJson);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// The file's element types and ops must be Braid's names.
Status checkNames(const algo::AlgoFile& f) {
  for (const std::string& t : f.dtypes) {
    bool known = false;
    for (int i = 0; i < braidNumTypes; ++i) {
      known |= t == datatypeName(static_cast<braidDataType_t>(i));
    }
    if (!known)
      return invalidArgument("\"dtypes\" names '" + t + "', not a Braid type (float32, ...)");
  }
  for (const std::string& o : f.ops) {
    bool known = false;
    for (int i = 0; i < braidNumOps; ++i) known |= o == redOpName(static_cast<braidRedOp_t>(i));
    if (!known) return invalidArgument("\"ops\" names '" + o + "', not a Braid op (sum, ...)");
  }
  return Status::ok();
}

Expected<std::shared_ptr<const algo::AlgoFile>> proveText(const std::string& text,
                                                          const std::string& where, int nranks) {
  Expected<algo::AlgoFile> parsed = algo::parseAlgoFile(text);
  if (!parsed.isOk()) return parsed.status().withContext(where + ": ");
  BRAID_TRY(checkNames(parsed.value()).withContext(where + ": "));
  BRAID_TRY(proveAlgorithm(parsed.value(), nranks, where));
  return std::make_shared<const algo::AlgoFile>(std::move(parsed).value());
}

// Every rank's hash of its files, compared: each rank must load the same algorithms.
Status ranksAgree(braidComm* comm, uint64_t hash, const std::string& what) {
  const int n = comm->comm->nranks();
  if (n == 1) return Status::ok();
  std::vector<uint64_t> all(n);
  // By the ring whatever BRAID_ALGO says: it may name the very algorithms being loaded.
  BRAID_TRY(agreeOnRing(comm, &hash, all.data(), sizeof(hash), "algorithm files"));
  for (int r = 0; r < n; ++r) {
    if (all[r] != hash) {
      return invalidUsage(what + ": rank " + std::to_string(r) +
                          " loads different algorithm files than rank " +
                          std::to_string(comm->comm->rank()) +
                          " (every rank must load the same files, in the same order)");
    }
  }
  return Status::ok();
}

// Whether a file that reads well claims `nranks` (one that does not read is refused by the
// proof, naming why).
bool claimsRankCount(const std::string& path, int nranks) {
  Expected<std::string> text = readText(path);
  if (!text.isOk()) return true;
  Expected<algo::AlgoFile> f = algo::parseAlgoFile(text.value());
  return !f.isOk() || f.value().claims(nranks);
}

}  // namespace

Expected<std::shared_ptr<const algo::AlgoFile>> provenAlgorithm(const std::string& pathOrJson,
                                                                int nranks) {
  BRAID_ASSIGN_OR_RETURN(std::string text, readText(pathOrJson));
  const std::string where = pathOrJson[0] == '{'   ? "<JSON text>"
                            : pathOrJson[0] == '<' ? "<XML text>"
                                                   : pathOrJson;
  const auto key = std::make_pair(contentHash(text), nranks);
  Verdicts& v = verdicts();
  {
    std::lock_guard<std::mutex> lock(v.mu);
    auto it = v.byContent.find(key);
    if (it != v.byContent.end()) return it->second;
  }
  Expected<std::shared_ptr<const algo::AlgoFile>> verdict = proveText(text, where, nranks);
  std::lock_guard<std::mutex> lock(v.mu);
  v.byContent.emplace(key, verdict);
  return verdict;
}

Status loadAlgorithmFiles(braidComm* comm) {
  const std::string list = envString("BRAID_ALGO_FILES");
  if (list.empty()) return Status::ok();
  uint64_t hash = 0;
  std::vector<std::shared_ptr<const algo::AlgoFile>> files;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t colon = list.find(':', start);
    const std::string path = list.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!path.empty() && !claimsRankCount(path, comm->comm->nranks())) {
      if (comm->comm->rank() == 0) {
        BRAID_INFO("BRAID_ALGO_FILES: %s does not claim %d ranks; not loaded here", path.c_str(),
                   comm->comm->nranks());
      }
    } else if (!path.empty()) {
      Expected<std::shared_ptr<const algo::AlgoFile>> f =
          provenAlgorithm(path, comm->comm->nranks());
      if (!f.isOk()) return f.status().withContext("BRAID_ALGO_FILES: ");
      hash = hash * 31 + contentHash(writeAlgoFile(*f.value()));
      files.push_back(f.value());
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  std::lock_guard<std::mutex> lock(comm->opMu);
  BRAID_TRY(ranksAgree(comm, hash, "BRAID_ALGO_FILES"));
  for (auto& f : files) {
    if (comm->comm->rank() == 0) {
      BRAID_INFO("loaded algorithm %s (%s, %s ranks, sizes %s), proven for %d ranks",
                 f->name.c_str(), algo::collectiveName(f->collective), f->ranksSpec.c_str(),
                 f->sizes.describe().c_str(), comm->comm->nranks());
    }
    comm->selector.addUserAlgorithm(f);
    comm->deviceSelector.addUserAlgorithm(f);  // device calls lower it (device_choice.h)
  }
  return Status::ok();
}

Status registerAlgorithm(braidComm* comm, const std::string& pathOrJson) {
  BRAID_ASSIGN_OR_RETURN(std::shared_ptr<const algo::AlgoFile> f,
                         provenAlgorithm(pathOrJson, comm->comm->nranks()));
  std::lock_guard<std::mutex> lock(comm->opMu);
  BRAID_TRY(ranksAgree(comm, contentHash(writeAlgoFile(*f)), "braidCommRegisterAlgorithm"));
  comm->selector.addUserAlgorithm(f);
  comm->deviceSelector.addUserAlgorithm(f);
  BRAID_INFO("registered algorithm %s (%s), proven for %d ranks", f->name.c_str(),
             algo::collectiveName(f->collective), comm->comm->nranks());
  return Status::ok();
}

}  // namespace braid
