#include "select/user_choice.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace braid {
namespace {

// One rank's progress through its steps in the walk.
struct Lane {
  size_t begin = 0, end = 0;  // the current batch
  std::vector<bool> done;     // per step of the batch
  double start = 0;           // when the batch started
  double finish = 0;          // the latest end among its steps so far
  double link = 0;            // when this rank's sending link is free
};

size_t batchEnd(const std::vector<algo::Step>& steps, size_t b) {
  while (b < steps.size() && steps[b].batchWithNext) ++b;
  return std::min(b + 1, steps.size());
}

}  // namespace

std::string whyNotServed(const algo::AlgoFile& f, algo::Collective c, uint64_t rankBytes,
                         int nranks, const CallFit* fit, const CostInputs* in) {
  if (f.collective != c) return std::string("it is an ") + algo::collectiveName(f.collective);
  if (!f.claims(nranks)) {
    return "it supports " + f.ranksSpec + " ranks, not " + std::to_string(nranks);
  }
  const algo::FileProgram* prog = f.programFor(nranks);
  if (in != nullptr && prog != nullptr && prog->windowed &&
      !(in->sharedWindows && in->nodes <= 1)) {
    return "it is a window program, and this communicator has no shared windows (they need "
           "one node over shm, and BRAID_SHM_WINDOW_BYTES > 0)";
  }
  if (!f.sizes.contains(rankBytes)) {
    return "its sizes are " + f.sizes.describe() + ", not " + std::to_string(rankBytes);
  }
  if (fit == nullptr) return "";
  if (fit->inPlace ? !f.inPlace : !f.outOfPlace) {
    return fit->inPlace ? "it serves out of place calls only" : "it serves in place calls only";
  }
  if (!f.allowsDtype(fit->dtype)) return "it does not take " + fit->dtype;
  if (!fit->op.empty() && !f.allowsOp(fit->op)) return "it does not take " + fit->op;
  if (algo::isRooted(c) && fit->root != f.root) {
    return "its root is " + std::to_string(f.root) + ", not " + std::to_string(fit->root);
  }
  return "";
}

Expected<const algo::AlgoFile*> firstServing(
    const std::vector<std::shared_ptr<const algo::AlgoFile>>& loaded,
    const std::vector<std::string>& names, algo::Collective c, uint64_t rankBytes, int nranks,
    const CallFit* fit, const std::string& spec, const CostInputs* in) {
  std::string why;
  for (const std::string& name : names) {
    const algo::AlgoFile* file = nullptr;
    for (const auto& u : loaded) {
      if (u->name == name) file = u.get();
    }
    const std::string no =
        file == nullptr
            ? "no algorithm of that name is loaded (BRAID_ALGO_FILES, braidCommRegisterAlgorithm)"
            : whyNotServed(*file, c, rankBytes, nranks, fit, in);
    if (no.empty()) return file;
    why += (why.empty() ? "" : "; ") + name + ": " + no;
  }
  return invalidArgument("BRAID_ALGO='" + spec + "' asks for " + algo::collectiveName(c) + " of " +
                         std::to_string(rankBytes) +
                         " bytes to run a loaded algorithm, and none serves it: " + why);
}

namespace {

// A window program: every round costs alpha plus its busiest rank's bytes put and read.
double priceWindowsUs(const algo::FileProgram& prog, double chunkBytes, const CostInputs& in) {
  std::vector<std::vector<double>> rounds;  // [round][rank] bytes
  for (int r = 0; r < prog.nranks; ++r) {
    size_t round = 0;
    bool started = false;
    for (const algo::Step& s : prog.ranks[r]) {
      if (s.op == algo::OpKind::kBeginRound) {
        round += started ? 1 : 0;
        started = true;
        if (rounds.size() <= round) rounds.resize(round + 1, std::vector<double>(prog.nranks));
      }
      const bool moves = s.op == algo::OpKind::kPut || s.op == algo::OpKind::kCopyPeer ||
                         s.op == algo::OpKind::kReducePeers;
      if (!started || !moves) continue;
      const double terms = s.op == algo::OpKind::kReducePeers ? prog.nranks : 1;
      rounds[round][r] += chunkBytes * static_cast<double>(s.count) * terms;
    }
  }
  double us = in.baseUs;
  for (const std::vector<double>& bytes : rounds) {
    us += in.intra.alphaUs + *std::max_element(bytes.begin(), bytes.end()) / (in.intra.gbps * 1e3);
  }
  return us;
}

}  // namespace

double priceProgramUs(const algo::AlgoFile& f, uint64_t rankBytes, const CostInputs& in) {
  const algo::FileProgram* prog = f.programFor(in.nranks);
  if (prog == nullptr) return std::numeric_limits<double>::infinity();
  if (prog->windowed) {
    if (!(in.sharedWindows && in.nodes <= 1)) return std::numeric_limits<double>::infinity();
    return priceWindowsUs(*prog, static_cast<double>(rankBytes) / prog->chunksPerBlock, in);
  }
  const int n = prog->nranks;
  const int perNode = std::max(in.ranksPerNode, 1);
  const double chunkBytes = static_cast<double>(rankBytes) / prog->chunksPerBlock;
  // FIFO schedules on a node with shared windows copy every byte in and out of a slot.
  const double copy = in.sharedWindows && in.nodes <= 1 ? fifoCopyFactor() : 1.0;
  auto linkOf = [&](int p, int q) { return p / perNode == q / perNode ? in.intra : in.inter; };
  std::vector<std::deque<double>> arrivals(static_cast<size_t>(n) * n);  // [src * n + dst]
  std::vector<Lane> lanes(n);
  for (int r = 0; r < n; ++r) {
    lanes[r].end = batchEnd(prog->ranks[r], 0);
    lanes[r].done.assign(lanes[r].end, false);
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < n; ++r) {
      Lane& l = lanes[r];
      const std::vector<algo::Step>& steps = prog->ranks[r];
      if (l.begin >= steps.size()) continue;
      for (size_t i = l.begin; i < l.end; ++i) {
        if (l.done[i - l.begin]) continue;
        const algo::Step& s = steps[i];
        // Per peer, a batch's steps keep their order.
        bool blocked = false;
        for (size_t j = l.begin; j < i && !blocked; ++j) {
          const algo::Step& e = steps[j];
          blocked = !l.done[j - l.begin] && ((s.sendPeer >= 0 && e.sendPeer == s.sendPeer) ||
                                             (s.recvPeer >= 0 && e.recvPeer == s.recvPeer));
        }
        double t = l.start;
        if (!blocked && algo::needsRecv(s.op)) {
          auto& q = arrivals[static_cast<size_t>(s.recvPeer) * n + r];
          if (q.empty()) {
            blocked = true;
          } else {
            t = std::max(t, q.front());
            q.pop_front();
          }
        }
        if (blocked) continue;
        if (algo::needsSend(s.op) && s.count > 0) {
          const LinkCost link = linkOf(r, s.sendPeer);
          const double bytes = chunkBytes * static_cast<double>(s.count) * copy;
          l.link = std::max(l.link, t) + bytes / (link.gbps * 1e3);
          t = l.link + link.alphaUs;
          arrivals[static_cast<size_t>(r) * n + s.sendPeer].push_back(t);
        } else if (algo::needsSend(s.op)) {
          arrivals[static_cast<size_t>(r) * n + s.sendPeer].push_back(t);
        }
        l.finish = std::max(l.finish, t);
        l.done[i - l.begin] = true;
        moved = true;
      }
      if (std::all_of(l.done.begin(), l.done.end(), [](bool d) { return d; })) {
        l.begin = l.end;
        l.end = batchEnd(steps, l.begin);
        l.done.assign(l.end - l.begin, false);
        l.start = l.finish;
        moved = true;
      }
    }
  }
  double end = 0;
  for (const Lane& l : lanes) {
    if (l.begin < prog->ranks[&l - lanes.data()].size()) {
      return std::numeric_limits<double>::infinity();  // stuck: no proof would pass it
    }
    end = std::max(end, l.finish);
  }
  return in.baseUs + end;
}

}  // namespace braid
