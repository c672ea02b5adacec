#include "algorithms/file/schedule_file.h"

#include <algorithm>
#include <cctype>

#include "algorithms/file/json.h"
#include "algorithms/file/msccl_xml.h"

namespace braid::algo {
namespace {

using Kind = JsonValue::Kind;

constexpr int kMaxRanks = 1 << 16;

Status bad(const JsonValue& v, const std::string& what) {
  return invalidArgument("line " + std::to_string(v.line) + ": " + what);
}

Expected<uint64_t> unsignedOf(const JsonValue& v, const char* key) {
  const bool fits = v.text.size() < 20 || (v.text.size() == 20 && v.text <= "18446744073709551615");
  if (!v.isInteger() || v.text[0] == '-' || !fits) {
    return bad(v, std::string("\"") + key + "\" must be an integer in 0..2^64-1");
  }
  return static_cast<uint64_t>(std::stoull(v.text));
}

Expected<int64_t> signedOf(const JsonValue& v, const char* key) {
  if (!v.isInteger() || v.text.size() > 12) {
    return bad(v, std::string("\"") + key + "\" must be an integer");
  }
  return static_cast<int64_t>(std::stoll(v.text));
}

Expected<bool> boolOf(const JsonValue& v, const char* key) {
  if (v.kind != Kind::kBool) return bad(v, std::string("\"") + key + "\" must be true or false");
  return v.boolean;
}

template <typename T, typename NameFn>
bool byName(const std::string& name, int n, NameFn nameOf, T* out) {
  for (int i = 0; i < n; ++i) {
    if (name == nameOf(static_cast<T>(i))) {
      *out = static_cast<T>(i);
      return true;
    }
  }
  return false;
}

// "any" or a list of names.
Expected<std::vector<std::string>> namesOf(const JsonValue* v, const char* key) {
  std::vector<std::string> out;
  if (v == nullptr || (v->kind == Kind::kString && v->text == "any")) return out;
  if (v->kind != Kind::kArray || v->items.empty()) {
    return bad(*v, std::string("\"") + key + "\" must be \"any\" or a list of names");
  }
  for (const JsonValue& i : v->items) {
    if (i.kind != Kind::kString) return bad(i, std::string("\"") + key + "\" lists names");
    out.push_back(i.text);
  }
  return out;
}

// A list of counts, "lo..hi" or "pow2:lo..hi".
Expected<std::vector<int>> rankCounts(const JsonValue& v, std::string* spec) {
  std::vector<int> out;
  if (v.kind == Kind::kArray) {
    for (const JsonValue& i : v.items) {
      BRAID_ASSIGN_OR_RETURN(int64_t n, signedOf(i, "ranks"));
      if (n < 1 || n > kMaxRanks) return bad(i, "a rank count must lie in 1..65536");
      out.push_back(static_cast<int>(n));
      *spec += (spec->empty() ? "" : ",") + std::to_string(n);
    }
  } else if (v.kind == Kind::kString) {
    *spec = v.text;
    std::string range = v.text;
    const bool pow2 = range.rfind("pow2:", 0) == 0;
    if (pow2) range = range.substr(5);
    const size_t dots = range.find("..");
    long lo = 0, hi = 0;
    char* end = nullptr;
    if (dots != std::string::npos) {
      lo = std::strtol(range.c_str(), &end, 10);
      if (end != range.c_str() + dots) lo = -1;
      hi = std::strtol(range.c_str() + dots + 2, &end, 10);
      if (*end != '\0') hi = -1;
    }
    if (dots == std::string::npos || lo < 1 || hi < lo || hi > kMaxRanks) {
      return bad(v, "\"ranks\" \"" + v.text +
                        "\" is not \"lo..hi\" or \"pow2:lo..hi\" with 1 <= lo <= hi <= 65536");
    }
    for (long n = lo; n <= hi; ++n) {
      if (!pow2 || (n & (n - 1)) == 0) out.push_back(static_cast<int>(n));
    }
  } else {
    return bad(v, "\"ranks\" must be a list of rank counts or a string rule");
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) return bad(v, "\"ranks\" claims no rank count");
  return out;
}

Status sizesOf(const JsonValue& v, SizeRange* s) {
  if (v.kind != Kind::kObject) return bad(v, "\"sizes\" must be an object");
  for (const auto& [k, x] : v.members) {
    if (k == "min") {
      BRAID_ASSIGN_OR_RETURN(s->min, unsignedOf(x, "min"));
    } else if (k == "max") {
      BRAID_ASSIGN_OR_RETURN(s->max, unsignedOf(x, "max"));
    } else if (k == "minInclusive") {
      BRAID_ASSIGN_OR_RETURN(s->minInclusive, boolOf(x, "minInclusive"));
    } else if (k == "maxInclusive") {
      BRAID_ASSIGN_OR_RETURN(s->maxInclusive, boolOf(x, "maxInclusive"));
    } else {
      return bad(x, "\"sizes\" has no key \"" + k + "\" (min, max, minInclusive, maxInclusive)");
    }
  }
  // Bounds must say whether they are inclusive: the cause of many silently unused files.
  if (v.find("min") != nullptr && v.find("minInclusive") == nullptr) {
    return bad(v, "\"sizes\" gives \"min\" without \"minInclusive\"");
  }
  if (v.find("max") != nullptr && v.find("maxInclusive") == nullptr) {
    return bad(v, "\"sizes\" gives \"max\" without \"maxInclusive\"");
  }
  return Status::ok();
}

Expected<BufRef> bufOf(const JsonValue& v) {
  BufRef b = BufRef::kNone;
  if (v.kind != Kind::kString || !byName(v.text, 6, bufRefName, &b)) {
    return bad(
        v, "unknown buffer '" + v.text + "' (none, input, output, scratch, windowIn, windowOut)");
  }
  return b;
}

Status stepField(const std::string& k, const JsonValue& x, Step* s) {
  if (k == "op") {
    if (x.kind != Kind::kString ||
        !byName(x.text, static_cast<int>(OpKind::kCopyPeer) + 1, opKindName, &s->op)) {
      return bad(x, "unknown op '" + x.text + "'");
    }
  } else if (k == "src") {
    BRAID_ASSIGN_OR_RETURN(s->src, bufOf(x));
  } else if (k == "dst") {
    BRAID_ASSIGN_OR_RETURN(s->dst, bufOf(x));
  } else if (k == "srcChunk") {
    BRAID_ASSIGN_OR_RETURN(s->srcOffset, unsignedOf(x, "srcChunk"));
  } else if (k == "dstChunk") {
    BRAID_ASSIGN_OR_RETURN(s->dstOffset, unsignedOf(x, "dstChunk"));
  } else if (k == "bufChunk") {
    BRAID_ASSIGN_OR_RETURN(s->bufOffset, unsignedOf(x, "bufChunk"));
  } else if (k == "chunks") {
    BRAID_ASSIGN_OR_RETURN(s->count, unsignedOf(x, "chunks"));
  } else if (k == "sendPeer" || k == "recvPeer") {
    BRAID_ASSIGN_OR_RETURN(int64_t p, signedOf(x, k.c_str()));
    if (p < -1 || p >= kMaxRanks) return bad(x, "\"" + k + "\" " + x.text + " is no rank");
    (k == "sendPeer" ? s->sendPeer : s->recvPeer) = static_cast<int32_t>(p);
  } else if (k == "final") {
    BRAID_ASSIGN_OR_RETURN(s->final, boolOf(x, "final"));
  } else if (k == "batchWithNext") {
    BRAID_ASSIGN_OR_RETURN(s->batchWithNext, boolOf(x, "batchWithNext"));
  } else if (k == "writes") {
    BRAID_ASSIGN_OR_RETURN(s->writes, boolOf(x, "writes"));
  } else if (k == "ownFromBuffer") {
    BRAID_ASSIGN_OR_RETURN(s->ownFromBuffer, boolOf(x, "ownFromBuffer"));
  } else if (k == "flag") {
    if (x.kind != Kind::kString || !byName(x.text, 3, winFlagName, &s->flag)) {
      return bad(x, "unknown flag '" + x.text + "' (ready, done, finished)");
    }
  } else {
    return bad(x, "a step has no key \"" + k + "\"");
  }
  return Status::ok();
}

// Chunks of buffer b on rank r of program p.
uint64_t chunksIn(BufRef b, const AlgoFile& f, const FileProgram& p, int r) {
  const uint64_t C = p.chunksPerBlock;
  switch (b) {
    case BufRef::kInput:
      return blocksOf(f.collective, true, p.nranks, r, f.root) * C;
    case BufRef::kOutput:
      return blocksOf(f.collective, false, p.nranks, r, f.root) * C;
    case BufRef::kScratch:
      return p.scratchChunks;
    case BufRef::kWindowIn:
    case BufRef::kWindowOut:
      return UINT64_MAX;  // the windows' size is the executor's; the simulator checks it
    case BufRef::kNone:
      break;
  }
  return 0;
}

Status checkStep(const AlgoFile& f, const FileProgram& p, int r, const Step& s) {
  const bool window = isWindowStep(s.op);
  if (window != p.windowed && !isLocal(s.op)) {
    return invalidArgument(std::string("op ") + opKindName(s.op) +
                           (p.windowed ? " in a window program" : " outside a window program"));
  }
  auto peerOk = [&](int32_t peer, bool needed, const char* key) -> Status {
    if (needed && (peer < 0 || peer >= p.nranks || (peer == r && !window))) {
      return invalidArgument(std::string(opKindName(s.op)) + " needs a " + key + " among the " +
                             std::to_string(p.nranks) + " ranks other than " + std::to_string(r) +
                             ", not " + std::to_string(peer));
    }
    return Status::ok();
  };
  BRAID_TRY(peerOk(s.sendPeer, needsSend(s.op), "sendPeer"));
  BRAID_TRY(peerOk(s.recvPeer, needsRecv(s.op) || s.op == OpKind::kCopyPeer, "recvPeer"));
  auto runOk = [&](BufRef b, uint64_t first, bool needed, const char* key) -> Status {
    if (!needed) return Status::ok();
    if (b == BufRef::kNone) {
      return invalidArgument(std::string(opKindName(s.op)) + " needs a " + key + " buffer");
    }
    const uint64_t have = chunksIn(b, f, p, r);
    if (first > have || s.count > have - first) {
      return invalidArgument(std::string(key) + " chunks [" + std::to_string(first) + ", " +
                             std::to_string(first + s.count) + ") lie outside " + bufRefName(b) +
                             "'s " + std::to_string(have) + " chunks");
    }
    return Status::ok();
  };
  BRAID_TRY(runOk(s.src, s.srcOffset, needsSrc(s.op), "src"));
  BRAID_TRY(runOk(s.dst, s.dstOffset, needsDst(s.op), "dst"));
  if (needsDst(s.op) && s.dst == BufRef::kInput) {
    return invalidArgument("a step writes the input");
  }
  return Status::ok();
}

Expected<FileProgram> programOf(const JsonValue& v, const AlgoFile& f) {
  FileProgram p;
  if (v.kind != Kind::kObject) return bad(v, "a program must be an object");
  for (const auto& [k, x] : v.members) {
    if (k == "nranks") {
      BRAID_ASSIGN_OR_RETURN(int64_t n, signedOf(x, "nranks"));
      if (n < 1 || n > kMaxRanks) return bad(x, "\"nranks\" must lie in 1..65536");
      p.nranks = static_cast<int>(n);
    } else if (k == "chunksPerBlock") {
      BRAID_ASSIGN_OR_RETURN(p.chunksPerBlock, unsignedOf(x, "chunksPerBlock"));
      if (p.chunksPerBlock == 0 || p.chunksPerBlock > (1ull << 32)) {
        return bad(x, "\"chunksPerBlock\" must lie in 1..2^32");
      }
    } else if (k == "scratchChunks") {
      BRAID_ASSIGN_OR_RETURN(p.scratchChunks, unsignedOf(x, "scratchChunks"));
    } else if (k == "windowed") {
      BRAID_ASSIGN_OR_RETURN(p.windowed, boolOf(x, "windowed"));
    } else if (k == "lendsInput" || k == "lendsOutput") {
      std::vector<bool>& lends = k == "lendsInput" ? p.lendsInput : p.lendsOutput;
      if (x.kind != Kind::kArray) return bad(x, "\"" + k + "\" lists a true or false per rank");
      for (const JsonValue& b : x.items) {
        BRAID_ASSIGN_OR_RETURN(bool lend, boolOf(b, k.c_str()));
        lends.push_back(lend);
      }
    } else if (k != "ranks") {
      return bad(x, "a program has no key \"" + k + "\"");
    }
  }
  const JsonValue* ranks = v.find("ranks");
  if (p.nranks == 0 || ranks == nullptr || ranks->kind != Kind::kArray) {
    return bad(v, "a program needs \"nranks\" and \"ranks\" (a list of each rank's steps)");
  }
  for (const std::vector<bool>* lends : {&p.lendsInput, &p.lendsOutput}) {
    if (!lends->empty() && static_cast<int>(lends->size()) != p.nranks) {
      return bad(v, "\"lendsInput\" and \"lendsOutput\" list one value per rank");
    }
  }
  if (static_cast<int>(ranks->items.size()) != p.nranks) {
    return bad(*ranks, "the program for " + std::to_string(p.nranks) + " ranks lists steps for " +
                           std::to_string(ranks->items.size()));
  }
  for (int r = 0; r < p.nranks; ++r) {
    const JsonValue& list = ranks->items[r];
    if (list.kind != Kind::kArray) return bad(list, "rank " + std::to_string(r) + "'s steps");
    p.ranks.emplace_back();
    for (size_t i = 0; i < list.items.size(); ++i) {
      const JsonValue& sv = list.items[i];
      const std::string where = std::to_string(p.nranks) + " ranks, rank " + std::to_string(r) +
                                ", step " + std::to_string(i) + ": ";
      if (sv.kind != Kind::kObject || sv.find("op") == nullptr) {
        return bad(sv, where + "a step is an object with an \"op\"");
      }
      Step s;
      s.count = 1;  // "chunks" left out: one
      for (const auto& [k, x] : sv.members) BRAID_TRY(stepField(k, x, &s).withContext(where));
      BRAID_TRY(
          checkStep(f, p, r, s).withContext("line " + std::to_string(sv.line) + ": " + where));
      p.ranks.back().push_back(s);
    }
  }
  return p;
}

Status headerField(const std::string& k, const JsonValue& x, AlgoFile* f) {
  if (k == "format") {
    if (x.kind != Kind::kString || x.text != "braid-schedule") {
      return bad(x, "\"format\" must be \"braid-schedule\"");
    }
  } else if (k == "version") {
    BRAID_ASSIGN_OR_RETURN(int64_t v, signedOf(x, "version"));
    if (v != kScheduleFileVersion) {
      return bad(x, "version " + x.text + " is not one this Braid reads (" +
                        std::to_string(kScheduleFileVersion) + ")");
    }
  } else if (k == "name") {
    if (x.kind != Kind::kString || x.text.empty()) return bad(x, "\"name\" must be a string");
    for (char c : x.text) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
        return bad(x, "\"name\" may hold letters, digits, '_', '-' and '.' only");
      }
    }
    f->name = x.text;
  } else if (k == "collective") {
    if (x.kind != Kind::kString ||
        !byName(x.text, static_cast<int>(Collective::kAllToAllv) + 1, collectiveName,
                &f->collective) ||
        f->collective == Collective::kAllToAllv) {
      return bad(x, "\"collective\" '" + x.text +
                        "' is not one a file serves (allreduce, allgather, reducescatter, "
                        "broadcast, reduce, gather, scatter, alltoall)");
    }
  } else if (k == "ranks") {
    BRAID_ASSIGN_OR_RETURN(f->nranks, rankCounts(x, &f->ranksSpec));
  } else if (k == "sizes") {
    BRAID_TRY(sizesOf(x, &f->sizes));
  } else if (k == "inPlace") {
    BRAID_ASSIGN_OR_RETURN(f->inPlace, boolOf(x, "inPlace"));
  } else if (k == "outOfPlace") {
    BRAID_ASSIGN_OR_RETURN(f->outOfPlace, boolOf(x, "outOfPlace"));
  } else if (k == "dtypes") {
    BRAID_ASSIGN_OR_RETURN(f->dtypes, namesOf(&x, "dtypes"));
  } else if (k == "ops") {
    BRAID_ASSIGN_OR_RETURN(f->ops, namesOf(&x, "ops"));
  } else if (k == "root") {
    BRAID_ASSIGN_OR_RETURN(int64_t r, signedOf(x, "root"));
    if (r < 0 || r >= kMaxRanks) return bad(x, "\"root\" must be a rank");
    f->root = static_cast<int>(r);
  } else if (k != "programs" && k != "comment") {
    return bad(x, "the file has no key \"" + k + "\"");
  }
  return Status::ok();
}

}  // namespace

bool SizeRange::empty() const {
  if (min > max) return true;
  if (min == max) return !(minInclusive && maxInclusive);
  return min + 1 == max && !minInclusive && !maxInclusive;
}

std::string SizeRange::describe() const {
  return std::string(minInclusive ? "[" : "(") + std::to_string(min) + ", " +
         (max == UINT64_MAX ? std::string("inf") : std::to_string(max)) +
         (maxInclusive ? "]" : ")") + " bytes";
}

const FileProgram* AlgoFile::programFor(int n) const {
  for (const FileProgram& p : programs) {
    if (p.nranks == n) return &p;
  }
  return nullptr;
}

bool AlgoFile::claims(int n) const { return std::binary_search(nranks.begin(), nranks.end(), n); }

bool AlgoFile::allowsDtype(const std::string& name) const {
  return dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), name) != dtypes.end();
}

bool AlgoFile::allowsOp(const std::string& name) const {
  // avg divides once, at the steps marked final: a file claims it by name, and the proof
  // then runs it too; "any" is every op but avg.
  const bool listed = std::find(ops.begin(), ops.end(), name) != ops.end();
  return listed || (ops.empty() && name != "avg");
}

bool isRooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}

uint64_t blocksOf(Collective c, bool input, int nranks, int rank, int root) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  const bool isRoot = rank == root;
  switch (c) {
    case Collective::kAllReduce:
      return 1;
    case Collective::kAllGather:
      return input ? 1 : n;
    case Collective::kReduceScatter:
      return input ? n : 1;
    case Collective::kBroadcast:
      return input ? (isRoot ? 1 : 0) : 1;
    case Collective::kReduce:
      return input ? 1 : (isRoot ? 1 : 0);
    case Collective::kGather:
      return input ? 1 : (isRoot ? n : 0);
    case Collective::kScatter:
      return input ? (isRoot ? n : 0) : 1;
    case Collective::kAllToAll:
      return n;
    case Collective::kAllToAllv:
      break;
  }
  return 0;
}

Expected<AlgoFile> parseAlgoFile(const std::string& text) {
  if (looksLikeXml(text)) return parseMscclXml(text);
  BRAID_ASSIGN_OR_RETURN(JsonValue doc, parseJson(text));
  if (doc.kind != Kind::kObject) return bad(doc, "a schedule file is one JSON object");
  AlgoFile f;
  for (const char* key : {"format", "version", "name", "collective", "ranks", "programs"}) {
    if (doc.find(key) == nullptr) {
      return invalidArgument(std::string("the file has no \"") + key +
                             "\" (see docs/algorithms.md)");
    }
  }
  for (const auto& [k, x] : doc.members) BRAID_TRY(headerField(k, x, &f));
  if (!f.inPlace && !f.outOfPlace) {
    return invalidArgument("the file serves neither in place nor out of place calls");
  }
  if (f.sizes.empty()) {
    return invalidArgument("\"sizes\" " + f.sizes.describe() + " contains no size");
  }
  const JsonValue& programs = *doc.find("programs");
  if (programs.kind != Kind::kArray) return bad(programs, "\"programs\" must be a list");
  for (const JsonValue& pv : programs.items) {
    BRAID_ASSIGN_OR_RETURN(FileProgram p, programOf(pv, f));
    if (f.programFor(p.nranks) != nullptr) {
      return bad(pv, "two programs for " + std::to_string(p.nranks) + " ranks");
    }
    if (!f.claims(p.nranks)) {
      return bad(pv, "a program for " + std::to_string(p.nranks) + " ranks, which \"ranks\" (" +
                         f.ranksSpec + ") does not claim");
    }
    f.programs.push_back(std::move(p));
  }
  for (int n : f.nranks) {
    if (f.programFor(n) == nullptr) {
      return invalidArgument("\"ranks\" (" + f.ranksSpec + ") claims " + std::to_string(n) +
                             " ranks, but the file has no program for " + std::to_string(n) +
                             " ranks");
    }
  }
  if (isRooted(f.collective) && f.root >= f.nranks.front()) {
    return invalidArgument("root " + std::to_string(f.root) + " is not a rank of " +
                           std::to_string(f.nranks.front()) + " ranks");
  }
  return f;
}

}  // namespace braid::algo
