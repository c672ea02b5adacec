#include "topo/xml.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/env.h"
#include "core/logging.h"
#include "topo/discover.h"
#include "topo/xml_reader.h"

namespace braid::topo {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Shortest text that reads back to the same double, so dumps round-trip exactly.
std::string num(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string attr(const char* key, const std::string& value) {
  return std::string(" ") + key + "=\"" + escape(value) + "\"";
}
std::string attr(const char* key, uint64_t v) { return attr(key, std::to_string(v)); }
std::string attr(const char* key, int v) { return attr(key, std::to_string(v)); }
std::string attr(const char* key, double v) { return attr(key, num(v)); }

void writeNode(const Node& n, std::ostringstream& out) {
  out << "  <node" << attr("id", n.id) << attr("name", n.name) << attr("pus", n.pus)
      << attr("fallback", n.fallback) << ">\n";
  for (const Package& p : n.packages) {
    out << "    <package" << attr("id", p.id) << attr("cores", p.cores) << attr("l1d", p.l1dBytes)
        << attr("l2", p.l2Bytes) << attr("l3", p.l3Bytes) << "/>\n";
  }
  for (const NumaNode& m : n.numaNodes) {
    out << "    <numa" << attr("id", m.id) << attr("package", m.package)
        << attr("memory", m.memoryBytes) << "/>\n";
  }
  for (const Gpu& g : n.gpus) {
    out << "    <gpu" << attr("name", g.name) << attr("busid", g.busId) << attr("gen", g.pcieGen)
        << attr("width", g.pcieWidth) << attr("pcie-gbps", g.pcieGBps)
        << attr("nvlink-gbps", g.nvlinkGBps) << attr("switch", g.pcieSwitch)
        << attr("numa", g.numa) << "/>\n";
  }
  for (const Nic& c : n.nics) {
    out << "    <nic" << attr("name", c.name) << attr("kind", std::string(nicKindName(c.kind)))
        << attr("gbps", c.speedGbps) << attr("busid", c.busId) << attr("switch", c.pcieSwitch)
        << attr("numa", c.numa) << "/>\n";
  }
  for (const Nvlink& l : n.nvlinks) {
    out << "    <nvlink" << attr("gpu", l.gpu) << attr("peer", l.peer) << attr("links", l.links)
        << attr("gbps", l.gbps) << "/>\n";
  }
  out << "  </node>\n";
}

void writeRanks(const Topology& topo, std::ostringstream& out) {
  for (size_t r = 0; r < topo.ranks.size(); ++r) {
    const RankPlace& p = topo.ranks[r];
    out << "  <rank" << attr("id", static_cast<int>(r)) << attr("node", p.node);
    const bool known = p.node >= 0 && p.node < static_cast<int>(topo.nodes.size());
    if (known && p.gpu >= 0 && p.gpu < static_cast<int>(topo.nodes[p.node].gpus.size())) {
      out << attr("gpu", topo.nodes[p.node].gpus[p.gpu].busId);
    }
    out << attr("numa", p.numa) << "/>\n";
  }
}

Status readPackage(const XmlTag& t, Node* node) {
  Package p;
  BRAID_TRY(t.allowOnly({"id", "cores", "l1d", "l2", "l3"}));
  BRAID_TRY(t.getInt("id", &p.id));
  BRAID_TRY(t.getInt("cores", &p.cores));
  BRAID_TRY(t.getU64("l1d", &p.l1dBytes));
  BRAID_TRY(t.getU64("l2", &p.l2Bytes));
  BRAID_TRY(t.getU64("l3", &p.l3Bytes));
  node->packages.push_back(p);
  return Status::ok();
}

Status readNuma(const XmlTag& t, Node* node) {
  NumaNode m;
  BRAID_TRY(t.allowOnly({"id", "package", "memory"}));
  BRAID_TRY(t.getInt("id", &m.id));
  BRAID_TRY(t.getInt("package", &m.package));
  BRAID_TRY(t.getU64("memory", &m.memoryBytes));
  node->numaNodes.push_back(m);
  return Status::ok();
}

Status readGpu(const XmlTag& t, Node* node) {
  Gpu g;
  BRAID_TRY(t.allowOnly(
      {"name", "busid", "gen", "width", "pcie-gbps", "nvlink-gbps", "switch", "numa"}));
  BRAID_TRY(t.getString("name", &g.name));
  BRAID_TRY(t.getString("busid", &g.busId));
  BRAID_TRY(t.getInt("gen", &g.pcieGen));
  BRAID_TRY(t.getInt("width", &g.pcieWidth));
  BRAID_TRY(t.getDouble("pcie-gbps", &g.pcieGBps));
  BRAID_TRY(t.getDouble("nvlink-gbps", &g.nvlinkGBps));
  BRAID_TRY(t.getInt("switch", &g.pcieSwitch));
  BRAID_TRY(t.getInt("numa", &g.numa));
  node->gpus.push_back(g);
  return Status::ok();
}

Status readNic(const XmlTag& t, Node* node) {
  Nic c;
  BRAID_TRY(t.allowOnly({"name", "kind", "gbps", "busid", "switch", "numa"}));
  BRAID_TRY(t.getString("name", &c.name));
  std::string kind = nicKindName(c.kind);
  BRAID_TRY(t.getString("kind", &kind));
  if (kind == "infiniband") {
    c.kind = NicKind::kInfiniband;
  } else if (kind != "ethernet") {
    return t.error("attribute 'kind' is '" + kind + "'; expected 'ethernet' or 'infiniband'");
  }
  BRAID_TRY(t.getDouble("gbps", &c.speedGbps));
  BRAID_TRY(t.getString("busid", &c.busId));
  BRAID_TRY(t.getInt("switch", &c.pcieSwitch));
  BRAID_TRY(t.getInt("numa", &c.numa));
  node->nics.push_back(c);
  return Status::ok();
}

Status readNvlink(const XmlTag& t, Node* node) {
  Nvlink l;
  BRAID_TRY(t.allowOnly({"gpu", "peer", "links", "gbps"}));
  BRAID_TRY(t.getString("gpu", &l.gpu));
  BRAID_TRY(t.getString("peer", &l.peer));
  BRAID_TRY(t.getInt("links", &l.links));
  BRAID_TRY(t.getDouble("gbps", &l.gbps));
  if (node->gpuIndex(l.gpu) < 0) {
    return t.error("attribute 'gpu' is '" + l.gpu + "', not the busid of a <gpu> before it");
  }
  if (l.peer != kNvswitch && node->gpuIndex(l.peer) < 0) {
    return t.error("attribute 'peer' is '" + l.peer + "'; expected a <gpu>'s busid or 'nvswitch'");
  }
  node->nvlinks.push_back(l);
  return Status::ok();
}

// A <rank/> after the nodes: rank `id` (the next one) on node `node`, on the GPU
// whose busid is `gpu` (absent: a host rank).
Status readRank(const XmlTag& t, Topology* topo) {
  BRAID_TRY(t.allowOnly({"id", "node", "gpu", "numa"}));
  int id = -1;
  RankPlace p;
  std::string gpu;
  BRAID_TRY(t.getInt("id", &id));
  BRAID_TRY(t.getInt("node", &p.node));
  BRAID_TRY(t.getString("gpu", &gpu));
  BRAID_TRY(t.getInt("numa", &p.numa));
  if (id != static_cast<int>(topo->ranks.size())) {
    return t.error("attribute 'id' is " + std::to_string(id) + "; expected " +
                   std::to_string(topo->ranks.size()) + " (ranks in order)");
  }
  if (p.node < 0 || p.node >= static_cast<int>(topo->nodes.size())) {
    return t.error("attribute 'node' is " + std::to_string(p.node) + "; expected 0.." +
                   std::to_string(static_cast<int>(topo->nodes.size()) - 1));
  }
  if (!gpu.empty()) {
    p.gpu = topo->nodes[p.node].gpuIndex(gpu);
    if (p.gpu < 0) return t.error("attribute 'gpu' is '" + gpu + "', not a GPU of its node");
  }
  topo->ranks.push_back(p);
  return Status::ok();
}

// Reads a <node> whose opening tag is `open`, up to and including </node>.
Status readNode(XmlReader& in, const XmlTag& open, Topology* topo) {
  Node node;
  BRAID_TRY(open.allowOnly({"id", "name", "pus", "fallback"}));
  if (!open.has("id")) return open.error("attribute 'id' (the host identity) is missing");
  BRAID_TRY(open.getString("id", &node.id));
  BRAID_TRY(open.getString("name", &node.name));
  BRAID_TRY(open.getInt("pus", &node.pus));
  BRAID_TRY(open.getString("fallback", &node.fallback));
  for (;;) {
    XmlTag t;
    BRAID_TRY(in.next(&t, "</node>"));
    if (t.closing && t.name == "node") break;
    if (t.closing || !t.selfClosing) {
      return t.error("expected <package/>, <numa/>, <gpu/>, <nic/>, <nvlink/> or </node>");
    }
    if (t.name == "package") {
      BRAID_TRY(readPackage(t, &node));
    } else if (t.name == "numa") {
      BRAID_TRY(readNuma(t, &node));
    } else if (t.name == "gpu") {
      BRAID_TRY(readGpu(t, &node));
    } else if (t.name == "nic") {
      BRAID_TRY(readNic(t, &node));
    } else if (t.name == "nvlink") {
      BRAID_TRY(readNvlink(t, &node));
    } else {
      return t.error("unknown element; expected package, numa, gpu, nic or nvlink inside <node>");
    }
  }
  topo->nodes.push_back(std::move(node));
  return Status::ok();
}

}  // namespace

std::string toXml(const Topology& topo) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\"?>\n<braid-topology version=\"1\">\n";
  for (const Node& n : topo.nodes) writeNode(n, out);
  writeRanks(topo, out);
  out << "</braid-topology>\n";
  return out.str();
}

Expected<Topology> parseXml(const std::string& text, const std::string& source) {
  XmlReader in(text, source);
  XmlTag root;
  BRAID_TRY(in.next(&root, "<braid-topology>"));
  if (root.name != "braid-topology" || root.closing || root.selfClosing) {
    return root.error("expected <braid-topology version=\"1\"> as the first element");
  }
  std::string version = "1";
  BRAID_TRY(root.allowOnly({"version"}));
  BRAID_TRY(root.getString("version", &version));
  if (version != "1") return root.error("version '" + version + "' is not supported; expected 1");
  Topology topo;
  for (;;) {
    XmlTag t;
    BRAID_TRY(in.next(&t, "</braid-topology>"));
    if (t.closing && t.name == "braid-topology") break;
    if (t.name == "rank" && t.selfClosing) {
      BRAID_TRY(readRank(t, &topo));
      continue;
    }
    if (t.name != "node" || t.closing || t.selfClosing || !topo.ranks.empty()) {
      return t.error("unknown element; expected <node ...>, then <rank/>s, or </braid-topology>");
    }
    BRAID_TRY(readNode(in, t, &topo));
  }
  BRAID_TRY(in.expectEnd());
  return topo;
}

Expected<Topology> loadXmlFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return systemError("cannot open topology file " + path);
  std::ostringstream text;
  text << f.rdbuf();
  return parseXml(text.str(), path);
}

Status writeXmlFile(const Topology& topo, const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return systemError("cannot create topology file " + path + " (BRAID_TOPO_DUMP_FILE)");
  f << toXml(topo);
  f.flush();
  if (!f) return systemError("cannot write topology file " + path + " (BRAID_TOPO_DUMP_FILE)");
  return Status::ok();
}

Expected<Topology> loadOrDiscover() {
  const std::string fileVar = envString("BRAID_TOPO_FILE");
  const char* file = fileVar.c_str();
  Expected<Topology> topo = (file && *file) ? loadXmlFile(file) : discoverLocal();
  if (!topo.isOk()) {
    if (file && *file) return topo.status().withContext("BRAID_TOPO_FILE: ");
    return topo;
  }
  if (file && *file) BRAID_INFO("topology: loaded from %s (BRAID_TOPO_FILE)", file);
  const std::string dumpVar = envString("BRAID_TOPO_DUMP_FILE");
  const char* dump = dumpVar.c_str();
  if (dump && *dump) {
    BRAID_TRY(writeXmlFile(topo.value(), dump));
    BRAID_INFO("topology: written to %s (BRAID_TOPO_DUMP_FILE)", dump);
  }
  return topo;
}

}  // namespace braid::topo
