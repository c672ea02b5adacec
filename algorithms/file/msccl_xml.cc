#include "algorithms/file/msccl_xml.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "algorithms/file/msccl_xml_internal.h"
#include "algorithms/file/xml.h"

namespace braid::algo {
namespace {

using msccl::Lane;
using msccl::LaneStep;
using msccl::Rank;
using msccl::where;

constexpr int kMaxRanks = 1 << 16;

Status bad(const XmlElement& e, const std::string& what) {
  return invalidArgument("line " + std::to_string(e.line) + ": " + what);
}

// Attribute `key` of `e` as an integer in [lo, hi]; `fallback` where it is absent and
// optional.
Expected<int64_t> intAttr(const XmlElement& e, const char* key, int64_t lo, int64_t hi,
                          const int64_t* fallback = nullptr, const std::string& who = "") {
  const std::string* v = e.attr(key);
  if (v == nullptr) {
    if (fallback != nullptr) return *fallback;
    return bad(e, who + "<" + e.name + "> has no " + key);
  }
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno != 0 || x < lo || x > hi) {
    return bad(e, who + "<" + e.name + "> " + key + "=\"" + *v + "\" is not an integer in " +
                      std::to_string(lo) + ".." + std::to_string(hi));
  }
  return static_cast<int64_t>(x);
}

Status onlyAttrs(const XmlElement& e, std::initializer_list<const char*> known,
                 const std::string& who) {
  for (const XmlAttr& a : e.attrs) {
    bool ok = false;
    for (const char* k : known) ok = ok || a.name == k;
    if (!ok) return bad(e, who + ": attribute " + a.name + " has no meaning in Braid");
  }
  return Status::ok();
}

struct StepKind {
  const char* name;
  OpKind op;
};

// MSCCL's step types with a Braid op; nop is read apart.
constexpr StepKind kKinds[] = {
    {"s", OpKind::kSend},
    {"r", OpKind::kRecv},
    {"rcs", OpKind::kRecvCopySend},
    {"rrc", OpKind::kRecvReduce},
    {"rrs", OpKind::kRecvReduceSend},
    {"rrcs", OpKind::kRecvReduceCopySend},
    {"cpy", OpKind::kCopy},
    {"re", OpKind::kReduceLocal},
};

// The header, and how its buffers map onto Braid's.
struct Algo {
  AlgoFile file;
  int ngpus = 0;
  uint64_t chunks = 1;  // per block
  bool inPlaceOnly = false;
  // An out-of-place program that writes its input works on a copy of it in scratch chunks
  // [0, inputChunks), made by a first step; its own scratch follows.
  bool inputAsScratch = false;
  uint64_t inputChunks = 0;
};

// Whether a step of the file writes buffer i.
bool writesInput(const XmlElement& root) {
  for (const XmlElement& g : root.children) {
    for (const XmlElement& t : g.children) {
      for (const XmlElement& s : t.children) {
        const std::string* type = s.attr("type");
        const std::string* dst = s.attr("dstbuf");
        if (type == nullptr || dst == nullptr || *dst != "i") continue;
        for (const char* w : {"r", "rcs", "rrc", "rrcs", "cpy", "re"}) {
          if (*type == w) return true;
        }
      }
    }
  }
  return false;
}

Status header(const XmlElement& e, Algo* a) {
  AlgoFile& f = a->file;
  BRAID_TRY(onlyAttrs(e,
                      {"name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
                       "outofplace", "minBytes", "maxBytes", "redop"},
                      "<algo>"));
  const std::string* name = e.attr("name");
  const std::string* coll = e.attr("coll");
  if (name == nullptr || name->empty() || coll == nullptr) {
    return bad(e, "<algo> needs a name and a coll");
  }
  for (char c : *name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
    f.name += ok ? c : '_';
  }
  struct Coll {
    const char* name;
    Collective c;
  };
  static const Coll kColls[] = {{"allreduce", Collective::kAllReduce},
                                {"allgather", Collective::kAllGather},
                                {"reduce_scatter", Collective::kReduceScatter},
                                {"reducescatter", Collective::kReduceScatter},
                                {"alltoall", Collective::kAllToAll}};
  bool known = false;
  for (const Coll& c : kColls) {
    if (*coll == c.name) {
      f.collective = c.c;
      known = true;
    }
  }
  if (!known) {
    return bad(e, "coll=\"" + *coll +
                      "\" is not one Braid reads from MSCCL files (allreduce, allgather, "
                      "reduce_scatter, alltoall)");
  }
  BRAID_ASSIGN_OR_RETURN(int64_t n, intAttr(e, "ngpus", 1, kMaxRanks));
  a->ngpus = static_cast<int>(n);
  f.nranks = {a->ngpus};
  f.ranksSpec = std::to_string(a->ngpus);
  BRAID_ASSIGN_OR_RETURN(int64_t k, intAttr(e, "nchunksperloop", 1, int64_t{1} << 32));
  const uint64_t blocks = std::max(blocksOf(f.collective, true, a->ngpus, 0, 0),
                                   blocksOf(f.collective, false, a->ngpus, 0, 0));
  if (static_cast<uint64_t>(k) % blocks != 0) {
    return bad(e, "nchunksperloop=\"" + std::to_string(k) + "\" is not a multiple of the " +
                      std::to_string(blocks) + " blocks of a " + *coll + "'s larger buffer");
  }
  a->chunks = static_cast<uint64_t>(k) / blocks;
  const int64_t zero = 0;
  BRAID_ASSIGN_OR_RETURN(int64_t inplace, intAttr(e, "inplace", 0, 1, &zero));
  const int64_t notInplace = 1 - inplace;
  BRAID_ASSIGN_OR_RETURN(int64_t outofplace, intAttr(e, "outofplace", 0, 1, &notInplace));
  f.inPlace = inplace == 1;
  f.outOfPlace = outofplace == 1;
  a->inPlaceOnly = f.inPlace && !f.outOfPlace;
  if (!f.inPlace && !f.outOfPlace) return bad(e, "<algo> is neither inplace nor outofplace");
  const int64_t unbounded = INT64_MAX;
  BRAID_ASSIGN_OR_RETURN(int64_t lo, intAttr(e, "minBytes", 0, INT64_MAX, &zero));
  BRAID_ASSIGN_OR_RETURN(int64_t hi, intAttr(e, "maxBytes", 0, INT64_MAX, &unbounded));
  if (hi == 0) hi = unbounded;  // MSCCL's files write maxBytes="0" for no bound
  f.sizes = SizeRange{static_cast<uint64_t>(lo), true,
                      hi == unbounded ? UINT64_MAX : static_cast<uint64_t>(hi), hi == unbounded};
  if (f.sizes.empty()) {
    return bad(e, "minBytes and maxBytes " + f.sizes.describe() + " contain no size");
  }
  const std::string* redop = e.attr("redop");
  if (redop != nullptr && *redop != "nop") {
    if (*redop != "sum" && *redop != "prod" && *redop != "max" && *redop != "min") {
      return bad(e, "redop=\"" + *redop + "\" is not sum, prod, max, min or nop");
    }
    f.ops = {*redop};
  }
  return Status::ok();
}

// Chunk run [first, first + n) of MSCCL buffer `buf` on rank r as Braid's buffer and
// first chunk.
Status mapRun(const Algo& a, const XmlElement& gpu, int r, const std::string& buf, int64_t first,
              uint64_t n, bool write, BufRef* ref, uint64_t* at) {
  const char* key = buf == "i" ? "i_chunks" : buf == "o" ? "o_chunks" : "s_chunks";
  if (buf != "i" && buf != "o" && buf != "s") {
    return invalidArgument("buffer '" + buf + "' is not i, o or s");
  }
  if (first < 0) return invalidArgument("a step needs a chunk offset >= 0 in buffer " + buf);
  BRAID_ASSIGN_OR_RETURN(int64_t declared, intAttr(gpu, key, 0, int64_t{1} << 40));
  const uint64_t f = static_cast<uint64_t>(first);
  if (f + n > static_cast<uint64_t>(declared)) {
    return invalidArgument(buf + " chunks [" + std::to_string(f) + ", " + std::to_string(f + n) +
                           ") lie outside the gpu's " + key + "=" + std::to_string(declared));
  }
  const Collective c = a.file.collective;
  *at = f;
  if (buf == "s" || (buf == "i" && a.inputAsScratch)) {
    *ref = BufRef::kScratch;
    if (buf == "s" && a.inputAsScratch) *at = f + a.inputChunks;
    return Status::ok();
  }
  if (!a.inPlaceOnly) {
    *ref = buf == "i" ? BufRef::kInput : BufRef::kOutput;
  } else if (c == Collective::kReduceScatter && buf == "i") {
    // In place, the output is block r of the input: there the input is written through it.
    const uint64_t lo = r * a.chunks;
    const bool inOutput = f >= lo && f + n <= lo + a.chunks;
    *ref = inOutput ? BufRef::kOutput : BufRef::kInput;
    if (inOutput) *at = f - lo;
    if (write && !inOutput) {
      return invalidArgument("it writes input chunks outside rank " + std::to_string(r) +
                             "'s own block, which Braid keeps read-only");
    }
  } else {
    // All-gather's input is block r of its output; others' input is their output.
    *ref = BufRef::kOutput;
    if (c == Collective::kAllGather && buf == "i") *at = f + r * a.chunks;
  }
  const uint64_t have = blocksOf(c, *ref == BufRef::kInput, a.ngpus, r, 0) * a.chunks;
  if (*at + n > have) {
    return invalidArgument(buf + " chunks [" + std::to_string(f) + ", " + std::to_string(f + n) +
                           ") lie outside " + bufRefName(*ref) + "'s " + std::to_string(have) +
                           " chunks (nchunksperloop per block of the larger buffer)");
  }
  return Status::ok();
}

Expected<LaneStep> stepOf(const Algo& a, const XmlElement& gpu, int r, const Lane& lane,
                          const XmlElement& e, int index) {
  const std::string ctx = "line " + std::to_string(e.line) + ": " + where(r, lane.id, index);
  if (e.name != "step") return bad(e, where(r, lane.id, -1) + ": <" + e.name + "> is no step");
  BRAID_TRY(onlyAttrs(
      e, {"s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep"},
      where(r, lane.id, index)));
  LaneStep s;
  s.line = e.line;
  const std::string* type = e.attr("type");
  if (type == nullptr) return invalidArgument(ctx + ": a step needs a type");
  s.type = *type;
  const int64_t none = -1;
  const std::string who = where(r, lane.id, index) + ": ";
  BRAID_ASSIGN_OR_RETURN(int64_t at, intAttr(e, "s", 0, INT32_MAX, nullptr, who));
  if (at != index) {
    return invalidArgument(ctx + ": s=\"" + std::to_string(at) + "\", but it is step " +
                           std::to_string(index) + " of its thread block");
  }
  BRAID_ASSIGN_OR_RETURN(int64_t depid, intAttr(e, "depid", -1, INT32_MAX, &none, who));
  BRAID_ASSIGN_OR_RETURN(int64_t deps, intAttr(e, "deps", -1, INT32_MAX, &none, who));
  s.depLane = static_cast<int>(depid);  // a thread block's id until resolved
  s.depStep = static_cast<int>(deps);
  if (s.type == "nop") {
    s.nop = true;
    return s;
  }
  const StepKind* kind = nullptr;
  for (const StepKind& k : kKinds) {
    if (s.type == k.name) kind = &k;
  }
  if (kind == nullptr) {
    return invalidArgument(ctx + ": step type '" + s.type +
                           "' has no meaning in Braid (it reads s, r, rcs, rrc, rrs, rrcs, cpy, "
                           "re and nop)");
  }
  Step& st = s.step;
  st.op = kind->op;
  BRAID_ASSIGN_OR_RETURN(int64_t cnt, intAttr(e, "cnt", 0, int64_t{1} << 40, nullptr, who));
  st.count = static_cast<uint64_t>(cnt);
  if (needsSend(st.op)) {
    if (lane.send < 0) return invalidArgument(ctx + ": a " + s.type + " step in a tb with send=-1");
    st.sendPeer = lane.send;
  }
  if (needsRecv(st.op)) {
    if (lane.recv < 0) return invalidArgument(ctx + ": a " + s.type + " step in a tb with recv=-1");
    st.recvPeer = lane.recv;
  }
  // A step reads its src where Braid's op reads one, and writes its dst where it writes.
  for (const bool dst : {false, true}) {
    if (!(dst ? needsDst(st.op) : needsSrc(st.op))) continue;
    const std::string* buf = e.attr(dst ? "dstbuf" : "srcbuf");
    if (buf == nullptr) {
      return invalidArgument(ctx + ": a " + s.type + " step needs " + (dst ? "dstbuf" : "srcbuf"));
    }
    BRAID_ASSIGN_OR_RETURN(
        int64_t off, intAttr(e, dst ? "dstoff" : "srcoff", -1, int64_t{1} << 40, nullptr, who));
    BRAID_TRY(mapRun(a, gpu, r, *buf, off, st.count, dst, dst ? &st.dst : &st.src,
                     dst ? &st.dstOffset : &st.srcOffset)
                  .withContext(ctx + ": "));
  }
  return s;
}

Expected<Lane> laneOf(const Algo& a, const XmlElement& gpu, int r, const XmlElement& e) {
  Lane lane;
  if (e.name != "tb") return bad(e, "gpu " + std::to_string(r) + ": <" + e.name + "> is no tb");
  BRAID_TRY(onlyAttrs(e, {"id", "send", "recv", "chan"}, "gpu " + std::to_string(r)));
  BRAID_ASSIGN_OR_RETURN(int64_t id, intAttr(e, "id", 0, INT32_MAX));
  lane.id = static_cast<int>(id);
  const int64_t zero = 0;
  BRAID_ASSIGN_OR_RETURN(int64_t send, intAttr(e, "send", -1, a.ngpus - 1));
  BRAID_ASSIGN_OR_RETURN(int64_t recv, intAttr(e, "recv", -1, a.ngpus - 1));
  BRAID_ASSIGN_OR_RETURN(int64_t chan, intAttr(e, "chan", 0, INT32_MAX, &zero));
  if (send == r || recv == r) {
    return bad(e, where(r, lane.id, -1) + ": a thread block's peer is its own gpu");
  }
  lane.send = static_cast<int>(send);
  lane.recv = static_cast<int>(recv);
  lane.chan = static_cast<int>(chan);
  for (size_t i = 0; i < e.children.size(); ++i) {
    BRAID_ASSIGN_OR_RETURN(LaneStep s, stepOf(a, gpu, r, lane, e.children[i], static_cast<int>(i)));
    lane.steps.push_back(std::move(s));
  }
  return lane;
}

// Dependencies name a thread block by id: made indexes into the rank's lanes, checked.
Status resolveDeps(int r, Rank* rank) {
  for (Lane& lane : rank->lanes) {
    for (size_t i = 0; i < lane.steps.size(); ++i) {
      LaneStep& s = lane.steps[i];
      if (s.depLane < 0) continue;
      int found = -1;
      for (size_t l = 0; l < rank->lanes.size(); ++l) {
        if (rank->lanes[l].id == s.depLane) found = static_cast<int>(l);
      }
      if (found < 0 || s.depStep < 0 ||
          s.depStep >= static_cast<int>(rank->lanes[found].steps.size())) {
        return invalidArgument("line " + std::to_string(s.line) + ": " +
                               where(r, lane.id, static_cast<int>(i)) + ": depends on " +
                               where(r, s.depLane, s.depStep) + ", which the file lacks");
      }
      s.depLane = found;
    }
  }
  return Status::ok();
}

Expected<std::vector<Rank>> ranksOf(const Algo& a, const XmlElement& root) {
  std::vector<Rank> ranks(a.ngpus);
  std::vector<bool> seen(a.ngpus, false);
  for (const XmlElement& g : root.children) {
    if (g.name != "gpu") return bad(g, "<algo> holds <" + g.name + ">, where <gpu> belongs");
    BRAID_TRY(onlyAttrs(g, {"id", "i_chunks", "o_chunks", "s_chunks"}, "<gpu>"));
    BRAID_ASSIGN_OR_RETURN(int64_t id, intAttr(g, "id", 0, a.ngpus - 1));
    const int r = static_cast<int>(id);
    if (seen[r]) return bad(g, "gpu " + std::to_string(r) + " is given twice");
    seen[r] = true;
    for (const XmlElement& t : g.children) {
      BRAID_ASSIGN_OR_RETURN(Lane lane, laneOf(a, g, r, t));
      for (const Lane& other : ranks[r].lanes) {
        if (other.id == lane.id) return bad(t, where(r, lane.id, -1) + " is given twice");
      }
      ranks[r].lanes.push_back(std::move(lane));
    }
    BRAID_TRY(resolveDeps(r, &ranks[r]));
  }
  for (int r = 0; r < a.ngpus; ++r) {
    if (!seen[r])
      return bad(root, "ngpus=\"" + std::to_string(a.ngpus) + "\", but gpu " + std::to_string(r) +
                           " is missing");
  }
  return ranks;
}

}  // namespace

bool looksLikeXml(const std::string& text) {
  const size_t bom = text.rfind(kUtf8Bom, 0) == 0 ? std::strlen(kUtf8Bom) : 0;
  for (char c : text.substr(bom)) {
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '<';
  }
  return false;
}

Expected<AlgoFile> parseMscclXml(const std::string& text) {
  BRAID_ASSIGN_OR_RETURN(XmlElement root, parseXml(text));
  if (root.name != "algo") {
    return bad(root, "the root element is <" + root.name + ">, not MSCCL's <algo>");
  }
  Algo a;
  BRAID_TRY(header(root, &a));
  FileProgram p;
  p.nranks = a.ngpus;
  p.chunksPerBlock = a.chunks;
  // Braid keeps a call's input read-only.
  std::vector<Step> prologue;
  if (!a.inPlaceOnly && writesInput(root)) {
    a.inputAsScratch = true;
    a.inputChunks = blocksOf(a.file.collective, true, a.ngpus, 0, 0) * a.chunks;
    Step copy{OpKind::kCopy};
    copy.src = BufRef::kInput;
    copy.dst = BufRef::kScratch;
    copy.count = a.inputChunks;
    prologue.push_back(copy);
  }
  BRAID_ASSIGN_OR_RETURN(std::vector<Rank> ranks, ranksOf(a, root));
  BRAID_ASSIGN_OR_RETURN(p.ranks, msccl::orderLanes(ranks, a.chunks, prologue, &p.scratchChunks));
  a.file.programs.push_back(std::move(p));
  // Read back as a JSON file: the same structure, under the same checks.
  Expected<AlgoFile> f = parseAlgoFile(writeAlgoFile(a.file));
  if (!f.isOk()) return f.status().withContext("the schedule read from MSCCL's XML: ");
  return f;
}

}  // namespace braid::algo
