// Private to the windows' simulator: ranks' windows, flags and clocks, the record of
// accesses that peers may race on, and the WindowSimulator class, shared by
// window_simulator.cc (checks, steps, the main loop) and window_simulator_order.cc
// (happens-before: access records, races, the end of a call). Not thread-safe.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "exec/reduce.h"
#include "exec/simulator_internal.h"
#include "exec/window_simulator.h"

namespace braid::wsim {

using algo::BufRef;
using algo::OpKind;
using algo::Step;
using algo::WinFlag;
using sim::Buffer;

// A vector clock: entry q is how many steps of rank q happen before (for rank q itself:
// the steps it has run).
using Clock = std::vector<uint64_t>;

// Memory of one rank that peers read: its window's four areas (half * 2 + output) and
// its two user storages (SimRank::input, SimRank::output).
enum Region : int { kStoreIn = 4, kStoreOut = 5, kRegions = 6 };
inline int areaRegion(int half, bool output) { return half * 2 + (output ? 1 : 0); }

// One access, in bytes of its region.
struct Access {
  uint64_t lo = 0, hi = 0;
  int rank = 0;        // who
  uint64_t clock = 0;  // its own clock entry at the access
  uint64_t round = 0;  // its round then
  size_t call = 0, step = 0;
};

struct Tracked {
  std::vector<Access> writes, reads;
};

// Where an operand lies: its bytes and, for memory peers may touch, its region.
struct Span {
  uint8_t* data = nullptr;
  uint64_t bytes = 0;  // from data to the end of the buffer
  int owner = -1;      // rank whose region it is, or -1 (scratch)
  int region = -1;
  uint64_t at = 0;  // bytes into the region
};

struct RankState {
  size_t call = 0, step = 0;
  bool ending = false;  // its steps of `call` are done; the end-of-call wait is left
  bool done = false;    // every call done
  uint64_t round = 0;   // rounds begun, roundsBefore included
  uint64_t callFirstRound = 0;
  std::array<uint64_t, 3> flags{};
  std::array<Clock, 3> flagClocks;
  std::vector<uint64_t> readyClock;  // by round - roundsBefore - 1: clock at its kReady
  Clock clock;
  std::vector<uint8_t> window;  // 4 areas
  std::vector<uint8_t> scratch;
  std::array<Tracked, kRegions> tracked;
};

class WindowSimulator {
 public:
  WindowSimulator(const std::vector<WindowSimCall>& calls, const WindowSimOptions& o)
      : calls_(calls), opts_(o) {}
  Status run();

 private:
  // window_simulator.cc
  Status checkArgs();
  Status checkSchedule(size_t c, int r);
  Status checkRounds(size_t c);
  void startCall(int r);
  bool runnable(int r);
  Status step(int r);
  Status execute(int r, const Step& st);
  Status reducePeers(int r, const Step& st);
  Status copyPeer(int r, const Step& st);
  Status deadlock();
  std::string waitsFor(int r);
  // Operands: a rank's own buffer (input, output, scratch), an area of this round's half.
  Expected<Span> own(int r, BufRef ref, uint64_t offset, uint64_t count, const char* what);
  Expected<Span> area(int owner, int r, BufRef ref, uint64_t offset, uint64_t count);
  // Rank q's term of a read of `ref` by rank r: its lent buffer, its area, or (q == r)
  // r's own buffer where `ownBuffer`.
  Expected<Span> term(int r, int q, const Step& st, bool ownBuffer);
  bool lends(size_t c, int q, BufRef area) const;
  // Whether rank r's read of rank q's term of `st` is q's lent output.
  bool lentOutput(int r, int q, const Step& st) const;

  // window_simulator_order.cc
  Status noteWrite(int r, const Span& s, uint64_t bytes);
  // lentOutput: a peer's lent output, which holds only what the peer wrote in this call.
  Status noteRead(int r, const Span& s, uint64_t bytes, bool lentOutput);
  Status endCall(int r);
  void sync(int r, const Clock& other);
  std::string at(int r) const;
  std::string who(const Access& a) const;

  const std::vector<WindowSimCall>& calls_;
  WindowSimOptions opts_;
  int n_ = 0;
  std::vector<RankState> ranks_;
  // By call, by rank: whether it lends its input / output in that call.
  std::vector<std::vector<bool>> lendIn_, lendOut_;
};

inline size_t elemBytes(const WindowSimCall& c) { return datatypeSize(c.datatype); }

}  // namespace braid::wsim
