// Tuning files: what braid-tune measured on a machine, read by the selector
// (BRAID_TUNING_FILE).
//
// Text, one entry per line, '#' starts a comment:
//   link <transport> <nranks> alpha_us=<us> gbps=<GB/s>
//   fit  <transport> <nranks> <collective> <algorithm> base_us=<us> gbps=<GB/s>
//        [bytes=<lo>-<hi>]
// A `link` line is the per-step latency and per-rank bandwidth of a transport
// ("shm", "socket") with that many ranks on the machine; a `fit` line is one
// algorithm's measured time, base_us + S / gbps, with S as the perf tools'
// size column (cost_model.h), for S in [lo, hi) when a band is given (sizes
// with k/m/g suffixes; hi may be "inf"). Unknown keywords, collectives or algorithms are
// errors naming the line. Immutable after parse; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "select/cost_model.h"

namespace braid {

struct Tuning {
  struct LinkEntry {
    std::string transport;
    int nranks = 0;
    LinkCost cost;
  };
  struct FitEntry {
    std::string transport;
    int nranks = 0;
    AlgoFit fit;
  };
  std::string source;  // the file, for messages
  std::vector<LinkEntry> links;
  std::vector<FitEntry> fits;

  static Expected<Tuning> parse(const std::string& text, const std::string& source);
  static Expected<Tuning> load(const std::string& path);
};

// `in` with the tuning applied for a communicator whose ranks on one node talk
// over `intraTransport` and across nodes over socket. One node: the link entry
// for that transport with the nearest rank count replaces `intra`, and the fit
// entries for exactly this rank count replace the closed forms. Several nodes:
// `intra` from the intra transport at ranksPerNode, `inter` from socket at
// nranks (fits, measured on one node, do not apply). Nothing matching: `in`.
CostInputs applyTuning(CostInputs in, const Tuning& tuning, const std::string& intraTransport);

}  // namespace braid
