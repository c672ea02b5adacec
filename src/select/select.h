// Algorithm selection. A communicator's Selector ranks the algorithms that
// implement a call's collective by the cost model's predicted time on its
// topology (and tuning file), fastest first; BRAID_ALGO overrides. The
// size-and-rank rule of thumb (defaultAlgorithms) remains for policies used
// without a topology.
//
// BRAID_ALGO grammar (NCCL_ALGO's, extended with per-collective size ranges):
//   spec   := item (('#' | ';') item)*
//   item   := [collective ':'] [lo '-' hi ':'] ['^'] algo (',' algo)*
//   lo, hi := sizes in bytes with k/m/g suffixes; hi may be "inf"
// e.g. "ring", "allreduce:ring,tree", "allreduce:0-64k:tree#allreduce:64k-inf:ring",
// "^tree". The first item that matches a call's collective and size decides:
// a list picks its first algorithm that implements the collective (none is an
// error, never a silent fallback); '^' removes algorithms from the default
// choice. A name that is no built-in names a loaded schedule file's algorithm
// (select/user_choice.h, "allreduce:my2d"): a list tries those first, and one that
// does not serve the call is an error naming why. Immutable after parse; thread-safe.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/status.h"
#include "select/cost_model.h"
#include "select/user_choice.h"

namespace braid {

class AlgoPolicy {
 public:
  static Expected<AlgoPolicy> parse(const std::string& spec);
  // The algorithm for one call (bytes: the collective's per-rank buffer size;
  // nodes: how many nodes the communicator spans).
  Expected<algo::Algorithm> choose(algo::Collective c, uint64_t bytes, int nranks,
                                   int nodes = 1) const;
  // The same, with the default choice taken from `candidates` (best first):
  // the first rule that matches decides as above; no rule, candidates.front().
  Expected<algo::Algorithm> chooseFrom(algo::Collective c, uint64_t bytes,
                                       const std::vector<algo::Algorithm>& candidates) const;
  // Whether a rule of the policy decides calls of `c` with `bytes`.
  bool overrides(algo::Collective c, uint64_t bytes) const;
  // Whether that rule names the algorithms (not a '^' exclusion from the default choice).
  bool names(algo::Collective c, uint64_t bytes) const;
  // The loaded algorithms' names that rule lists (nullptr: no rule, or it lists none);
  // *exclude: whether it is a '^' rule.
  // Whether that rule lists built-in algorithms (not a '^' rule).
  bool namesBuiltIn(algo::Collective c, uint64_t bytes) const;
  const std::vector<std::string>* userNames(algo::Collective c, uint64_t bytes,
                                            bool* exclude) const;
  const std::string& spec() const { return spec_; }

 private:
  struct Rule {
    int collective = -1;  // -1: every collective
    uint64_t lo = 0;
    uint64_t hi = UINT64_MAX;
    bool exclude = false;
    std::vector<algo::Algorithm> algos;
    std::vector<std::string> users;  // names of loaded algorithms
  };
  static Expected<Rule> parseItem(const std::string& item);

  std::string spec_;
  std::vector<Rule> rules_;
};

// The rule of thumb: candidates for (collective, bytes, nranks), best first.
std::vector<algo::Algorithm> defaultAlgorithms(algo::Collective c, uint64_t bytes, int nranks,
                                               int nodes = 1);
bool parseCollective(const std::string& name, algo::Collective* out);

// One communicator's choice of algorithm per call: the policy's rules first,
// else the cost model's fastest for (collective, bytes) on `inputs`, loaded
// algorithms (select/user_choice.h) competing within the calls they serve.
class Selector {
 public:
  struct Choice {
    algo::Algorithm algorithm = algo::Algorithm::kRing;
    double predictedUs = 0;  // the cost model's time for the chosen algorithm
    bool forced = false;     // BRAID_ALGO decided
    bool named = false;      // ... by naming the algorithm (not by a '^' exclusion)
    // A loaded algorithm (then `algorithm` means nothing); owned by the selector.
    const algo::AlgoFile* user = nullptr;
    const char* name() const {
      return user != nullptr ? user->name.c_str() : algo::algorithmName(algorithm);
    }
  };
  Selector() = default;
  Selector(AlgoPolicy policy, CostInputs inputs)
      : policy_(std::move(policy)), inputs_(std::move(inputs)) {}
  // `rankBytes`: count x element size of the call (the per-rank buffer); `fit`: the
  // call's mode, type, op and root where known.
  Expected<Choice> choose(algo::Collective c, uint64_t rankBytes,
                          const CallFit* fit = nullptr) const;
  // The same, remembering the last answer per collective (a job repeats its
  // sizes, and ranking allocates): for the operation path, one call at a time.
  Expected<Choice> chooseForCall(algo::Collective c, uint64_t rankBytes,
                                 const CallFit* fit = nullptr);
  // "ring 12.3 us; tree 15.0 us; direct 20.1 us": the ranking, for logs; then each
  // loaded algorithm of `c`, priced, or why it does not serve the call.
  std::string explain(algo::Collective c, uint64_t rankBytes, const CallFit* fit = nullptr) const;
  // A proven schedule file's algorithm joins the choice (one of that name is replaced).
  void addUserAlgorithm(std::shared_ptr<const algo::AlgoFile> file);
  const std::vector<std::shared_ptr<const algo::AlgoFile>>& userAlgorithms() const {
    return users_;
  }
  const AlgoPolicy& policy() const { return policy_; }
  const CostInputs& inputs() const { return inputs_; }

 private:
  Expected<Choice> chooseUser(algo::Collective c, uint64_t rankBytes, const CallFit* fit,
                              const std::vector<std::string>& names) const;

  AlgoPolicy policy_;
  CostInputs inputs_;
  struct Recent {
    bool valid = false;
    uint64_t bytes = 0;
    Choice choice;
  };
  std::array<Recent, 16> recent_{};  // by collective
  std::vector<std::shared_ptr<const algo::AlgoFile>> users_;
};

}  // namespace braid
