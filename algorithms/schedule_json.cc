#include "algorithms/schedule_json.h"

#include <vector>

namespace braid::algo {
namespace {

// Names written here are Braid's own (collectives, algorithms, ops): no escaping needed
// beyond refusing a quote or backslash, which none has.
void field(std::string& out, const char* key, const std::string& value, bool quoted) {
  out += out.back() == '{' ? "\"" : ", \"";
  out += key;
  out += "\": ";
  if (!quoted) {
    out += value;
    return;
  }
  out += '"';
  for (char c : value) out += (c == '"' || c == '\\') ? '_' : c;
  out += '"';
}

void number(std::string& out, const char* key, long long v) {
  field(out, key, std::to_string(v), false);
}

void flag(std::string& out, const char* key, bool v) {
  field(out, key, v ? "true" : "false", false);
}

template <typename T>
void list(std::string& out, const char* key, const std::vector<T>& v) {
  std::string items = "[";
  for (size_t i = 0; i < v.size(); ++i) items += (i ? ", " : "") + std::to_string(v[i]);
  field(out, key, items + "]", false);
}

}  // namespace

std::string scheduleJson(const Schedule& s, const CollArgs& a, const char* algorithm,
                         const char* executor) {
  std::string out = "{";
  field(out, "collective", collectiveName(a.collective), true);
  field(out, "algorithm", algorithm, true);
  field(out, "executor", executor, true);
  number(out, "rank", s.rank);
  number(out, "nranks", s.nranks);
  number(out, "count", static_cast<long long>(a.count));
  number(out, "elemSize", a.elemSize);
  flag(out, "inPlace", a.inPlace);
  number(out, "root", a.root);
  number(out, "maxStepElems", static_cast<long long>(a.maxStepElems));
  number(out, "scratchElems", static_cast<long long>(s.scratchElems));
  if (a.collective == Collective::kAllToAllv) {
    list(out, "sendCounts", a.sendCounts);
    list(out, "sendDispls", a.sendDispls);
    list(out, "recvCounts", a.recvCounts);
    list(out, "recvDispls", a.recvDispls);
  }
  if (!a.nodeOf.empty()) list(out, "nodeOf", a.nodeOf);
  if (s.windowed) {
    flag(out, "windowed", true);
    number(out, "windowElems", static_cast<long long>(a.windowElems));
    flag(out, "scaledPut", a.scaledPut);
    flag(out, "lendsInput", s.lendsInput);
    flag(out, "lendsOutput", s.lendsOutput);
  }
  out += ", \"steps\": [";
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    std::string line = "{";
    field(line, "op", opKindName(st.op), true);
    field(line, "src", bufRefName(st.src), true);
    number(line, "srcOffset", static_cast<long long>(st.srcOffset));
    field(line, "dst", bufRefName(st.dst), true);
    number(line, "dstOffset", static_cast<long long>(st.dstOffset));
    number(line, "count", static_cast<long long>(st.count));
    number(line, "sendPeer", st.sendPeer);
    number(line, "recvPeer", st.recvPeer);
    flag(line, "final", st.final);
    flag(line, "batchWithNext", st.batchWithNext);
    if (st.op == OpKind::kSignal || st.op == OpKind::kWait) {
      field(line, "flag", winFlagName(st.flag), true);
    }
    if (st.op == OpKind::kBeginRound) flag(line, "writes", st.writes);
    if (st.op == OpKind::kReducePeers || st.op == OpKind::kCopyPeer) {
      number(line, "bufOffset", static_cast<long long>(st.bufOffset));
      if (st.op == OpKind::kReducePeers) flag(line, "ownFromBuffer", st.ownFromBuffer);
    }
    out += (i ? ",\n" : "\n") + line + "}";
  }
  out += "\n]}\n";
  return out;
}

}  // namespace braid::algo
