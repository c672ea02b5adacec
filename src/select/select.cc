#include "select/select.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "core/env.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

std::vector<std::string> split(const std::string& s, const char* seps) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::strchr(seps, c) != nullptr) {
      out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool parseBound(const std::string& s, uint64_t* out) {
  if (s == "inf" || s == "INF") {
    *out = UINT64_MAX;
    return true;
  }
  int64_t v = parseSize(s);
  if (v < 0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

bool parseCollective(const std::string& name, Collective* out) {
  static const std::pair<const char*, Collective> kNames[] = {
      {"allreduce", Collective::kAllReduce},
      {"allgather", Collective::kAllGather},
      {"reducescatter", Collective::kReduceScatter},
      {"broadcast", Collective::kBroadcast},
      {"reduce", Collective::kReduce},
      {"gather", Collective::kGather},
      {"scatter", Collective::kScatter},
      {"alltoall", Collective::kAllToAll},
      {"alltoallv", Collective::kAllToAllv}};
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [n, c] : kNames) {
    if (lower == n) {
      *out = c;
      return true;
    }
  }
  return false;
}

std::vector<Algorithm> defaultAlgorithms(Collective c, uint64_t bytes, int nranks, int nodes) {
  const bool small = bytes < (32u << 10);  // measured: ring wins from 32 KiB (4 ranks, shm)
  // Across nodes with several ranks per node, keep most traffic inside nodes.
  const bool layered = nodes > 1 && nodes < nranks && !small;
  if (layered && algo::supports(Algorithm::kHierarchical, c)) {
    return {Algorithm::kHierarchical, Algorithm::kRing};
  }
  switch (c) {
    case Collective::kAllReduce:
      // Measured, 4 ranks over shm on a 2-core VM: direct (one-shot) wins from
      // 64 B to 4 KiB, ring from 32 KiB on (see the issue note).
      if (nranks <= 2) return {Algorithm::kRing, Algorithm::kDirect, Algorithm::kTree};
      if (bytes <= (8u << 10)) {
        return {Algorithm::kDirect, Algorithm::kRing, Algorithm::kHalvingDoubling};
      }
      return {Algorithm::kRing, Algorithm::kTwoShot, Algorithm::kHalvingDoubling, Algorithm::kTree};
    case Collective::kAllGather:
      return small ? std::vector{Algorithm::kBruck, Algorithm::kHalvingDoubling, Algorithm::kRing}
                   : std::vector{Algorithm::kRing, Algorithm::kHalvingDoubling, Algorithm::kBruck};
    case Collective::kReduceScatter:
      return small ? std::vector{Algorithm::kHalvingDoubling, Algorithm::kRing}
                   : std::vector{Algorithm::kRing, Algorithm::kHalvingDoubling};
    case Collective::kBroadcast:
    case Collective::kReduce:
      return small ? std::vector{Algorithm::kTree, Algorithm::kRing}
                   : std::vector{Algorithm::kRing, Algorithm::kTree};
    case Collective::kGather:
    case Collective::kScatter:
      return {Algorithm::kLinear};
    case Collective::kAllToAll:
      return small ? std::vector{Algorithm::kBruck, Algorithm::kPairwise}
                   : std::vector{Algorithm::kPairwise, Algorithm::kBruck};
    case Collective::kAllToAllv:
      return {Algorithm::kPairwise};
  }
  return {Algorithm::kRing};
}

Expected<AlgoPolicy::Rule> AlgoPolicy::parseItem(const std::string& item) {
  Rule rule;
  std::vector<std::string> parts = split(item, ":");
  std::string algos = parts.back();
  parts.pop_back();
  auto bad = [&](const std::string& why) {
    return invalidArgument("BRAID_ALGO item '" + item + "': " + why);
  };
  for (const std::string& p : parts) {
    Collective c;
    if (parseCollective(p, &c)) {
      rule.collective = static_cast<int>(c);
      continue;
    }
    size_t dash = p.find('-');
    if (dash == std::string::npos || !parseBound(p.substr(0, dash), &rule.lo) ||
        !parseBound(p.substr(dash + 1), &rule.hi) || rule.lo > rule.hi) {
      return bad("'" + p + "' is neither a collective nor a size range like 0-64k");
    }
  }
  if (!algos.empty() && algos[0] == '^') {
    rule.exclude = true;
    algos = algos.substr(1);
  }
  for (const std::string& a : split(algos, ",")) {
    Algorithm alg;
    if (algo::parseAlgorithm(a, &alg)) {
      rule.algos.push_back(alg);
      continue;
    }
    bool nameLike = !a.empty() && std::isalpha(static_cast<unsigned char>(a[0]));
    for (char ch : a)
      nameLike &=
          std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
    if (!nameLike || rule.collective < 0) {
      return bad("unknown algorithm '" + a +
                 "' (built-in: ring, tree, halving_doubling, bruck, pairwise, linear, direct, "
                 "two_shot, hierarchical; a loaded algorithm is named with its collective, "
                 "e.g. allreduce:" +
                 (nameLike ? a : std::string("my2d")) + ")");
    }
    rule.users.push_back(a);
  }
  return rule;
}

Expected<AlgoPolicy> AlgoPolicy::parse(const std::string& spec) {
  AlgoPolicy policy;
  policy.spec_ = spec;
  for (const std::string& item : split(spec, "#;")) {
    if (item.empty()) continue;
    BRAID_ASSIGN_OR_RETURN(Rule rule, parseItem(item));
    policy.rules_.push_back(std::move(rule));
  }
  return policy;
}

Expected<Algorithm> AlgoPolicy::choose(Collective c, uint64_t bytes, int nranks, int nodes) const {
  return chooseFrom(c, bytes, defaultAlgorithms(c, bytes, nranks, nodes));
}

bool AlgoPolicy::overrides(Collective c, uint64_t bytes) const {
  for (const Rule& r : rules_) {
    if ((r.collective < 0 || r.collective == static_cast<int>(c)) && bytes >= r.lo &&
        bytes < r.hi) {
      return true;
    }
  }
  return false;
}

bool AlgoPolicy::namesBuiltIn(Collective c, uint64_t bytes) const {
  for (const Rule& r : rules_) {
    if ((r.collective < 0 || r.collective == static_cast<int>(c)) && bytes >= r.lo &&
        bytes < r.hi) {
      return !r.exclude && !r.algos.empty();
    }
  }
  return false;
}

bool AlgoPolicy::names(Collective c, uint64_t bytes) const {
  for (const Rule& r : rules_) {
    if ((r.collective < 0 || r.collective == static_cast<int>(c)) && bytes >= r.lo &&
        bytes < r.hi) {
      return !r.exclude;
    }
  }
  return false;
}

const std::vector<std::string>* AlgoPolicy::userNames(Collective c, uint64_t bytes,
                                                      bool* exclude) const {
  for (const Rule& r : rules_) {
    if ((r.collective < 0 || r.collective == static_cast<int>(c)) && bytes >= r.lo &&
        bytes < r.hi) {
      *exclude = r.exclude;
      return r.users.empty() ? nullptr : &r.users;
    }
  }
  return nullptr;
}

Expected<Algorithm> AlgoPolicy::chooseFrom(Collective c, uint64_t bytes,
                                           const std::vector<Algorithm>& candidates) const {
  for (const Rule& r : rules_) {
    if (r.collective >= 0 && r.collective != static_cast<int>(c)) continue;
    if (bytes < r.lo || bytes >= r.hi) continue;
    if (r.exclude) {
      for (Algorithm a : candidates) {
        if (std::find(r.algos.begin(), r.algos.end(), a) == r.algos.end()) return a;
      }
      return invalidArgument(std::string("BRAID_ALGO='") + spec_ +
                             "' excludes every algorithm "
                             "that implements " +
                             algo::collectiveName(c));
    }
    for (Algorithm a : r.algos) {
      if (algo::supports(a, c)) return a;
    }
    std::string names;
    for (Algorithm a : r.algos) names += std::string(names.empty() ? "" : ", ") + algorithmName(a);
    for (const std::string& u : r.users) names += (names.empty() ? "" : ", ") + u;
    return invalidArgument(
        std::string("BRAID_ALGO='") + spec_ + "' asks for " + names + " for " +
        algo::collectiveName(c) + ", which " +
        (r.algos.size() > 1 ? "none of them implements" : "it does not implement"));
  }
  if (candidates.empty()) {
    return internalError(std::string("no algorithm implements ") + algo::collectiveName(c));
  }
  return candidates.front();
}

Expected<Selector::Choice> Selector::chooseUser(Collective c, uint64_t rankBytes,
                                                const CallFit* fit,
                                                const std::vector<std::string>& names) const {
  BRAID_ASSIGN_OR_RETURN(
      const algo::AlgoFile* file,
      firstServing(users_, names, c, rankBytes, inputs_.nranks, fit, policy_.spec(), &inputs_));
  Choice choice;
  choice.user = file;
  choice.forced = choice.named = true;
  choice.predictedUs = priceProgramUs(*file, rankBytes, inputs_);
  return choice;
}

Expected<Selector::Choice> Selector::choose(Collective c, uint64_t rankBytes,
                                            const CallFit* fit) const {
  bool exclude = false;
  const std::vector<std::string>* named = policy_.userNames(c, rankBytes, &exclude);
  if (named != nullptr && !exclude) {
    Expected<Choice> user = chooseUser(c, rankBytes, fit, *named);
    // A list that names built-ins too falls back to them.
    if (user.isOk() || !policy_.namesBuiltIn(c, rankBytes)) return user;
  }
  const uint64_t S = modelBytes(c, rankBytes, inputs_.nranks);
  std::vector<Algorithm> candidates;
  for (const auto& [a, us] : rankAlgorithms(c, S, inputs_)) candidates.push_back(a);
  // Every implementing algorithm stays eligible for '^' rules, priced or not.
  for (Algorithm a : defaultAlgorithms(c, rankBytes, inputs_.nranks, inputs_.nodes)) {
    if (std::find(candidates.begin(), candidates.end(), a) == candidates.end()) {
      candidates.push_back(a);
    }
  }
  Choice choice;
  BRAID_ASSIGN_OR_RETURN(choice.algorithm, policy_.chooseFrom(c, rankBytes, candidates));
  choice.forced = policy_.overrides(c, rankBytes);
  choice.named = policy_.names(c, rankBytes);
  choice.predictedUs = predictUs(choice.algorithm, c, S, inputs_);
  if (choice.named) return choice;
  // The cost model decides: loaded algorithms compete within the calls they serve.
  for (const auto& u : users_) {
    if (!whyNotServed(*u, c, rankBytes, inputs_.nranks, fit, &inputs_).empty()) continue;
    if (exclude && named != nullptr &&
        std::find(named->begin(), named->end(), u->name) != named->end()) {
      continue;
    }
    const double us = priceProgramUs(*u, rankBytes, inputs_);
    if (us < choice.predictedUs) {
      choice.user = u.get();
      choice.predictedUs = us;
    }
  }
  return choice;
}

Expected<Selector::Choice> Selector::chooseForCall(Collective c, uint64_t rankBytes,
                                                   const CallFit* fit) {
  // Whether a loaded algorithm serves a call depends on more than its size.
  const bool plain =
      std::none_of(users_.begin(), users_.end(), [&](const auto& u) { return u->collective == c; });
  Recent& r = recent_[static_cast<size_t>(c) % recent_.size()];
  if (plain && r.valid && r.bytes == rankBytes) return r.choice;
  BRAID_ASSIGN_OR_RETURN(Choice choice, choose(c, rankBytes, fit));
  if (plain) r = Recent{true, rankBytes, choice};
  return choice;
}

void Selector::addUserAlgorithm(std::shared_ptr<const algo::AlgoFile> file) {
  for (auto& u : users_) {
    if (u->name == file->name) {
      u = std::move(file);
      return;
    }
  }
  users_.push_back(std::move(file));
}

std::string Selector::explain(Collective c, uint64_t rankBytes, const CallFit* fit) const {
  std::string out;
  char buf[64];
  for (const auto& [a, us] : rankAlgorithms(c, modelBytes(c, rankBytes, inputs_.nranks), inputs_)) {
    std::snprintf(buf, sizeof(buf), "%s%s %.1f us", out.empty() ? "" : "; ", algo::algorithmName(a),
                  us);
    out += buf;
  }
  for (const auto& u : users_) {
    if (u->collective != c) continue;
    const std::string no = whyNotServed(*u, c, rankBytes, inputs_.nranks, fit, &inputs_);
    if (no.empty()) {
      std::snprintf(buf, sizeof(buf), " %.1f us", priceProgramUs(*u, rankBytes, inputs_));
      out += "; " + u->name + " (loaded)" + buf;
    } else {
      out += "; " + u->name + " (loaded) does not serve this call: " + no;
    }
  }
  return out;
}

}  // namespace braid
