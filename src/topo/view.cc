#include "topo/view.h"

#include <sched.h>

#include <algorithm>
#include <mutex>

#include "core/env.h"
#include "core/logging.h"
#include "topo/discover.h"
#include "topo/report.h"
#include "topo/xml.h"

namespace braid::topo {
namespace {

struct LocalView {
  std::once_flag once;
  std::string blob;
  Node node;  // what blob describes (empty when blob is)
};

LocalView& localView() {
  static LocalView view;
  std::call_once(view.once, [] {
    if (!envString("BRAID_TOPO_FILE").empty()) return;
    Expected<Topology> t = discoverLocal();
    if (t.isOk()) {
      view.blob = toXml(t.value());
      view.node = t.value().nodes[0];
    } else {
      BRAID_WARN("topology: discovery failed (%s); this node will be described as a fallback",
                 t.status().message().c_str());
    }
  });
  return view;
}

Node nodeFromBlob(const RankView& r, int rank) {
  if (r.nodeBlob.empty()) {
    return fallbackNode("rank " + std::to_string(rank) + " sent no description of its node");
  }
  Expected<Topology> t = parseXml(r.nodeBlob, "rank " + std::to_string(rank) + "'s node");
  if (!t.isOk() || t.value().nodes.size() != 1) {
    const std::string why = t.isOk() ? "it describes " + std::to_string(t.value().nodes.size()) +
                                           " nodes, not 1"
                                     : t.status().message();
    BRAID_WARN("topology: rank %d's node description is unusable (%s); using a fallback", rank,
               why.c_str());
    return fallbackNode("rank " + std::to_string(rank) + "'s description is unusable: " + why);
  }
  return t.value().nodes[0];
}

// What a GPU communicator's rank 0 says at INFO: where each rank runs, the paths
// between them, and, where a node has several NICs, each GPU's paths to them.
// Host ranks say nothing new (their shape is in the cost model's line).
void logGpuRanks(const MergedTopology& m) {
  if (logLevel() < LogLevel::kInfo) return;
  bool gpu = false;
  for (const RankPlace& p : m.places) gpu = gpu || p.gpu >= 0;
  if (!gpu) return;
  for (const std::string& line : rankLines(m.topology, m.places)) {
    BRAID_INFO("topology: %s", line.c_str());
  }
  for (const std::string& line : pathMatrixLines(m.topology, m.places, 16)) {
    BRAID_INFO("topology: paths %s", line.c_str());
  }
  for (size_t n = 0; n < m.topology.nodes.size(); ++n) {
    if (m.topology.nodes[n].nics.size() < 2) continue;  // no choice to show
    for (const std::string& line : gpuNicLines(m.topology.nodes[n])) {
      BRAID_INFO("topology: node %zu %s", n, line.c_str());
    }
  }
}

}  // namespace

std::string localNodeBlob() { return localView().blob; }

std::string localPlace(const std::string& gpuBusId) {
  unsigned cpu = 0;
  unsigned numa = 0;
  const int known = getcpu(&cpu, &numa) == 0 ? static_cast<int>(numa) : -1;
  return placeString(known, normalizeBusId(gpuBusId));
}

std::string localNearestNic(const std::string& place) {
  const LocalView& view = localView();
  if (view.blob.empty()) return "";
  const int nic = nearestNic(view.node, parsePlace(place, view.node, 0));
  return nic >= 0 ? view.node.nics[nic].name : "";
}

Expected<MergedTopology> mergeViews(const std::vector<RankView>& ranks, int myRank) {
  MergedTopology out;
  const std::string file = envString("BRAID_TOPO_FILE");
  int nodes = 0;
  for (const RankView& r : ranks) nodes = std::max(nodes, r.node + 1);
  if (!file.empty()) {
    BRAID_ASSIGN_OR_RETURN(Topology loaded, loadXmlFile(file));
    if (loaded.nodes.empty()) return invalidArgument("BRAID_TOPO_FILE " + file + " has no node");
    for (int i = 0; i < nodes; ++i) {
      out.topology.nodes.push_back(loaded.nodes[std::min<size_t>(i, loaded.nodes.size() - 1)]);
    }
  } else {
    out.topology.nodes.resize(nodes);
    std::vector<bool> filled(nodes, false);
    for (size_t r = 0; r < ranks.size(); ++r) {
      const RankView& v = ranks[r];
      if (filled[v.node]) continue;
      Node n = nodeFromBlob(v, static_cast<int>(r));
      // The job's identity wins over what discovery called the host
      // (BRAID_HOST_ID may split one machine into several nodes).
      n.id = v.hostId;
      if (n.name.empty()) n.name = v.hostName;
      out.topology.nodes[v.node] = std::move(n);
      filled[v.node] = true;
    }
  }
  for (const RankView& v : ranks) {
    out.places.push_back(parsePlace(v.place, out.topology.nodes[v.node], v.node));
  }
  if (myRank != 0) return out;
  const std::string dump = envString("BRAID_TOPO_DUMP_FILE");
  if (!dump.empty()) {
    Topology withRanks = out.topology;
    withRanks.ranks = out.places;
    BRAID_TRY(writeXmlFile(withRanks, dump));
    BRAID_INFO("topology: written to %s (BRAID_TOPO_DUMP_FILE)", dump.c_str());
  }
  logGpuRanks(out);
  return out;
}

}  // namespace braid::topo
