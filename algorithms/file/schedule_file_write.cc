// writeAlgoFile and fileFromSchedules (algorithms/file/schedule_file.h).
#include <string>

#include "algorithms/file/json.h"
#include "algorithms/file/schedule_file.h"

namespace braid::algo {
namespace {

void key(std::string& out, const char* k, const std::string& value) {
  out += (out.back() == '{' ? "\"" : ", \"") + std::string(k) + "\": " + value;
}

std::string names(const std::vector<std::string>& v) {
  if (v.empty()) return "\"any\"";
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + jsonQuote(v[i]);
  return out + "]";
}

std::string boolText(bool b) { return b ? "true" : "false"; }

// One step, keys that hold their defaults left out.
std::string stepText(const Step& s) {
  std::string out = "{";
  key(out, "op", jsonQuote(opKindName(s.op)));
  if (s.src != BufRef::kNone) {
    key(out, "src", jsonQuote(bufRefName(s.src)));
    key(out, "srcChunk", std::to_string(s.srcOffset));
  }
  if (s.dst != BufRef::kNone) {
    key(out, "dst", jsonQuote(bufRefName(s.dst)));
    key(out, "dstChunk", std::to_string(s.dstOffset));
  }
  key(out, "chunks", std::to_string(s.count));
  if (s.sendPeer >= 0) key(out, "sendPeer", std::to_string(s.sendPeer));
  if (s.recvPeer >= 0) key(out, "recvPeer", std::to_string(s.recvPeer));
  if (s.final) key(out, "final", "true");
  if (s.batchWithNext) key(out, "batchWithNext", "true");
  if (s.op == OpKind::kSignal || s.op == OpKind::kWait) {
    key(out, "flag", jsonQuote(winFlagName(s.flag)));
  }
  if (s.op == OpKind::kBeginRound) key(out, "writes", boolText(s.writes));
  if (s.op == OpKind::kReducePeers || s.op == OpKind::kCopyPeer) {
    key(out, "bufChunk", std::to_string(s.bufOffset));
  }
  if (s.op == OpKind::kReducePeers) key(out, "ownFromBuffer", boolText(s.ownFromBuffer));
  return out + "}";
}

}  // namespace

std::string writeAlgoFile(const AlgoFile& f) {
  std::string out = "{";
  key(out, "format", "\"braid-schedule\"");
  key(out, "version", std::to_string(f.version));
  key(out, "name", jsonQuote(f.name));
  key(out, "collective", jsonQuote(collectiveName(f.collective)));
  std::string ranks = "[";
  for (size_t i = 0; i < f.nranks.size(); ++i)
    ranks += (i ? ", " : "") + std::to_string(f.nranks[i]);
  key(out, "ranks", ranks + "]");
  out += ",\n \"sizes\": {\"min\": " + std::to_string(f.sizes.min) +
         ", \"minInclusive\": " + boolText(f.sizes.minInclusive) +
         ", \"max\": " + std::to_string(f.sizes.max) +
         ", \"maxInclusive\": " + boolText(f.sizes.maxInclusive) + "}";
  key(out, "inPlace", boolText(f.inPlace));
  key(out, "outOfPlace", boolText(f.outOfPlace));
  key(out, "dtypes", names(f.dtypes));
  key(out, "ops", names(f.ops));
  if (isRooted(f.collective)) key(out, "root", std::to_string(f.root));
  out += ",\n \"programs\": [";
  for (size_t p = 0; p < f.programs.size(); ++p) {
    const FileProgram& pr = f.programs[p];
    out += std::string(p ? "," : "") + "\n  {\"nranks\": " + std::to_string(pr.nranks) +
           ", \"chunksPerBlock\": " + std::to_string(pr.chunksPerBlock) +
           ", \"scratchChunks\": " + std::to_string(pr.scratchChunks);
    if (pr.windowed) out += ", \"windowed\": true";
    for (const auto& [k, lends] :
         {std::pair{"lendsInput", &pr.lendsInput}, std::pair{"lendsOutput", &pr.lendsOutput}}) {
      if (lends->empty() || !pr.windowed) continue;
      out += std::string(", \"") + k + "\": [";
      for (size_t r = 0; r < lends->size(); ++r) out += (r ? ", " : "") + boolText((*lends)[r]);
      out += "]";
    }
    out += ", \"ranks\": [";
    for (size_t r = 0; r < pr.ranks.size(); ++r) {
      out += std::string(r ? "," : "") + "\n   [";
      for (size_t i = 0; i < pr.ranks[r].size(); ++i) {
        out += std::string(i ? ",\n    " : "") + stepText(pr.ranks[r][i]);
      }
      out += "]";
    }
    out += "]}";
  }
  return out + "\n ]}\n";
}

AlgoFile fileFromSchedules(const std::vector<Schedule>& ranks, const CollArgs& args,
                           const std::string& name) {
  AlgoFile f;
  f.name = name;
  f.collective = args.collective;
  f.nranks = {args.nranks};
  f.ranksSpec = std::to_string(args.nranks);
  const uint64_t bytes = args.count * args.elemSize;
  f.sizes = SizeRange{bytes, true, bytes, true};
  f.inPlace = args.inPlace;
  f.outOfPlace = !args.inPlace;
  f.root = args.root;
  FileProgram p;
  p.nranks = args.nranks;
  p.chunksPerBlock = args.count == 0 ? 1 : args.count;  // one chunk per element
  for (const Schedule& s : ranks) {
    p.scratchChunks = std::max(p.scratchChunks, s.scratchElems);
    p.windowed = s.windowed;
    p.lendsInput.push_back(s.lendsInput);
    p.lendsOutput.push_back(s.lendsOutput);
    p.ranks.push_back(s.steps);
  }
  f.programs.push_back(std::move(p));
  return f;
}

}  // namespace braid::algo
