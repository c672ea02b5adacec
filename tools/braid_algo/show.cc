#include "show.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <vector>

namespace braid::tools {
namespace {

constexpr int kLane = 60;    // pixels between lanes
constexpr int kColumn = 90;  // pixels between columns
constexpr int kLeft = 80;    // room for the lane names
constexpr int kTop = 50;

struct Placed {
  int rank = 0;
  size_t step = 0;
  int column = 0;
};

struct Arrow {
  Placed from, to;
};

std::string runText(const algo::Step& s, uint64_t first) {
  if (s.count <= 1) return "c" + std::to_string(first);
  return "c" + std::to_string(first) + "-" + std::to_string(first + s.count - 1);
}

const char* colorOf(algo::OpKind op) {
  switch (op) {
    case algo::OpKind::kSend:
    case algo::OpKind::kRecv:
    case algo::OpKind::kRecvCopySend:
      return "#2b6cb0";
    case algo::OpKind::kCopy:
      return "#718096";
    default:
      return "#c05621";  // reductions
  }
}

// Each step's column: after its rank's previous step and after the send it receives.
std::vector<std::vector<int>> columns(const algo::FileProgram& p, std::vector<Arrow>* arrows) {
  const int n = p.nranks;
  std::vector<std::vector<int>> col(n);
  std::vector<size_t> next(n, 0);
  std::vector<std::deque<Placed>> sent(static_cast<size_t>(n) * n);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < n; ++r) {
      while (next[r] < p.ranks[r].size()) {
        const algo::Step& s = p.ranks[r][next[r]];
        int c = col[r].empty() ? 0 : col[r].back() + 1;
        if (algo::needsRecv(s.op)) {
          auto& q = sent[static_cast<size_t>(s.recvPeer) * n + r];
          if (q.empty()) break;
          c = std::max(c, q.front().column + 1);
          arrows->push_back({q.front(), Placed{r, next[r], c}});
          q.pop_front();
        }
        col[r].push_back(c);
        if (algo::needsSend(s.op))
          sent[static_cast<size_t>(r) * n + s.sendPeer].push_back({r, next[r], c});
        ++next[r];
        moved = true;
      }
    }
  }
  return col;
}

int xOf(int column) { return kLeft + column * kColumn + kColumn / 2; }
int yOf(int rank) { return kTop + rank * kLane; }

}  // namespace

std::string programSvg(const algo::AlgoFile& file, const algo::FileProgram& p) {
  std::vector<Arrow> arrows;
  const std::vector<std::vector<int>> col = columns(p, &arrows);
  int width = 1;
  for (const auto& c : col) {
    if (!c.empty()) width = std::max(width, c.back() + 1);
  }
  const int w = kLeft + width * kColumn + 20, h = kTop + p.nranks * kLane;
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "font-family=\"sans-serif\" font-size=\"11\">\n<defs><marker id=\"a\" "
                "viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" "
                "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\"/></marker>"
                "</defs>\n<text x=\"10\" y=\"20\" font-size=\"14\">%s: %s, %d ranks, %llu "
                "chunks per block</text>\n",
                w, h, file.name.c_str(), algo::collectiveName(file.collective), p.nranks,
                static_cast<unsigned long long>(p.chunksPerBlock));
  out += buf;
  for (int r = 0; r < p.nranks; ++r) {
    std::snprintf(buf, sizeof(buf),
                  "<text x=\"10\" y=\"%d\">rank %d</text><line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
                  "y2=\"%d\" stroke=\"#ccc\"/>\n",
                  yOf(r) + 4, r, kLeft, yOf(r), w - 10, yOf(r));
    out += buf;
  }
  for (const Arrow& a : arrows) {
    const algo::Step& s = p.ranks[a.from.rank][a.from.step];
    const algo::Step& d = p.ranks[a.to.rank][a.to.step];
    const int x1 = xOf(a.from.column), y1 = yOf(a.from.rank);
    const int x2 = xOf(a.to.column), y2 = yOf(a.to.rank) + (y1 < yOf(a.to.rank) ? -6 : 6);
    std::snprintf(buf, sizeof(buf),
                  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                  "marker-end=\"url(#a)\"><title>%s %s</title></line>\n"
                  "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n",
                  x1, y1, x2, y2, colorOf(d.op), algo::opKindName(d.op),
                  runText(s, s.srcOffset).c_str(), (x1 + x2) / 2 + 3, (y1 + y2) / 2, colorOf(d.op),
                  runText(d, algo::needsDst(d.op) ? d.dstOffset : d.srcOffset).c_str());
    out += buf;
  }
  for (int r = 0; r < p.nranks; ++r) {
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const algo::Step& s = p.ranks[r][i];
      if (!algo::isLocal(s.op)) continue;
      std::snprintf(buf, sizeof(buf),
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"16\" fill=\"white\" "
                    "stroke=\"%s\"><title>%s</title></rect><text x=\"%d\" y=\"%d\">%s %s</text>\n",
                    xOf(col[r][i]) - 40, yOf(r) - 8, 80, colorOf(s.op), algo::opKindName(s.op),
                    xOf(col[r][i]) - 37, yOf(r) + 4, algo::opKindName(s.op),
                    runText(s, s.dstOffset).c_str());
      out += buf;
    }
  }
  return out + "</svg>\n";
}

}  // namespace braid::tools
