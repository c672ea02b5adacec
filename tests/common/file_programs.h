// Schedule-file programs built in C++ for tests (algorithms/file/schedule_file.h): a ring
// all-reduce and a 2-D (rows x columns) all-reduce over chunks, as
// examples/algorithms/allreduce_2d.py writes them, for tests that need a file without
// Python. Header-only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "algorithms/file/schedule_file.h"

namespace braid::test {

using algo::BufRef;
using algo::OpKind;
using algo::Step;

inline Step fileStep(OpKind op, BufRef src, uint64_t srcChunk, BufRef dst, uint64_t dstChunk,
                     uint64_t chunks, int sendPeer = -1, int recvPeer = -1) {
  Step s;
  s.op = op;
  s.src = src;
  s.srcOffset = srcChunk;
  s.dst = dst;
  s.dstOffset = dstChunk;
  s.count = chunks;
  s.sendPeer = sendPeer;
  s.recvPeer = recvPeer;
  return s;
}

using Group = std::pair<uint64_t, uint64_t>;  // first chunk, chunks

// A ring over `members` on `groups` (one per member): reduce-scatter, then all-gather,
// on the output; member p ends the reduce-scatter holding group (p + 1) % m.
inline void ringReduceScatter(algo::FileProgram* p, const std::vector<int>& members,
                              const std::vector<Group>& groups) {
  const int m = static_cast<int>(members.size());
  for (int pos = 0; pos < m; ++pos) {
    const int r = members[pos], next = members[(pos + 1) % m], prev = members[(pos + m - 1) % m];
    for (int s = 0; s < m - 1; ++s) {
      const Group out = groups[((pos - s) % m + m) % m], in = groups[((pos - s - 1) % m + m) % m];
      p->ranks[r].push_back(
          fileStep(OpKind::kSend, BufRef::kOutput, out.first, BufRef::kNone, 0, out.second, next));
      p->ranks[r].push_back(fileStep(OpKind::kRecvReduce, BufRef::kOutput, in.first,
                                     BufRef::kOutput, in.first, in.second, -1, prev));
    }
  }
}

inline void ringAllGather(algo::FileProgram* p, const std::vector<int>& members,
                          const std::vector<Group>& groups) {
  const int m = static_cast<int>(members.size());
  for (int pos = 0; pos < m; ++pos) {
    const int r = members[pos], next = members[(pos + 1) % m], prev = members[(pos + m - 1) % m];
    for (int s = 0; s < m - 1; ++s) {
      const Group out = groups[((pos + 1 - s) % m + m) % m], in = groups[((pos - s) % m + m) % m];
      p->ranks[r].push_back(
          fileStep(OpKind::kSend, BufRef::kOutput, out.first, BufRef::kNone, 0, out.second, next));
      p->ranks[r].push_back(fileStep(OpKind::kRecv, BufRef::kNone, 0, BufRef::kOutput, in.first,
                                     in.second, -1, prev));
    }
  }
}

// rows x cols ranks (rows == 1: a plain ring): see examples/algorithms/allreduce_2d.py.
inline algo::FileProgram gridAllReduce(int rows, int cols) {
  const int n = rows * cols;
  algo::FileProgram p;
  p.nranks = n;
  p.chunksPerBlock = static_cast<uint64_t>(n);
  p.ranks.resize(n);
  for (int r = 0; r < n; ++r) {
    p.ranks[r].push_back(fileStep(OpKind::kCopy, BufRef::kInput, 0, BufRef::kOutput, 0, n));
  }
  std::vector<Group> groups;
  for (int g = 0; g < cols; ++g) groups.push_back({uint64_t(g) * rows, uint64_t(rows)});
  for (int i = 0; i < rows; ++i) {
    std::vector<int> row;
    for (int j = 0; j < cols; ++j) row.push_back(i * cols + j);
    ringReduceScatter(&p, row, groups);
  }
  for (int j = 0; j < cols; ++j) {
    std::vector<int> col;
    for (int i = 0; i < rows; ++i) col.push_back(i * cols + j);
    std::vector<Group> chunks;
    for (int k = 0; k < rows; ++k) chunks.push_back({groups[(j + 1) % cols].first + k, 1});
    ringReduceScatter(&p, col, chunks);
    ringAllGather(&p, col, chunks);
  }
  for (int i = 0; i < rows; ++i) {
    std::vector<int> row;
    for (int j = 0; j < cols; ++j) row.push_back(i * cols + j);
    ringAllGather(&p, row, groups);
  }
  return p;
}

// A window step (algorithms/schedule.h) of a file program: a sync step (kBeginRound with
// `writes`, kSignal, kWait on `peer`) or, with buffers, a put or read of chunks.
inline Step windowStep(OpKind op, algo::WinFlag flag = algo::WinFlag::kReady, int peer = -1) {
  Step s;
  s.op = op;
  s.flag = flag;
  s.writes = op == OpKind::kBeginRound;
  s.recvPeer = peer;
  return s;
}

// A direct all-gather over the windows, as examples/algorithms/allgather_windows.py writes
// it: every rank puts its input into its window, signals ready, and copies each peer's
// block once the peer's ready flag is there, then signals finished (its input is lent).
inline algo::FileProgram windowAllGather(int n) {
  algo::FileProgram p;
  p.nranks = n;
  p.windowed = true;
  p.lendsInput.assign(n, true);
  p.lendsOutput.assign(n, false);
  p.ranks.resize(n);
  for (int r = 0; r < n; ++r) {
    auto& steps = p.ranks[r];
    steps.push_back(windowStep(OpKind::kBeginRound));
    steps.push_back(fileStep(OpKind::kPut, BufRef::kInput, 0, BufRef::kWindowIn, 0, 1));
    steps.push_back(windowStep(OpKind::kSignal));
    steps.push_back(fileStep(OpKind::kCopy, BufRef::kInput, 0, BufRef::kOutput, r, 1));
    for (int i = 1; i < n; ++i) {
      const int q = (r + i) % n;
      steps.push_back(windowStep(OpKind::kWait, algo::WinFlag::kReady, q));
      steps.push_back(
          fileStep(OpKind::kCopyPeer, BufRef::kWindowIn, 0, BufRef::kOutput, q, 1, -1, q));
    }
    steps.push_back(windowStep(OpKind::kSignal, algo::WinFlag::kFinished));
  }
  return p;
}

// An all-reduce file of one program (`ranks` claims its rank count).
inline algo::AlgoFile allReduceFile(const std::string& name, algo::FileProgram program) {
  algo::AlgoFile f;
  f.name = name;
  f.collective = algo::Collective::kAllReduce;
  f.nranks = {program.nranks};
  f.ranksSpec = std::to_string(program.nranks);
  f.programs.push_back(std::move(program));
  return f;
}

}  // namespace braid::test
