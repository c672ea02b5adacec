// NodeWindows' calls of at most one cache line (exec/host/shared_windows_layout.h, kLineBytes): the
// data rides in the line of its own epoch, so a peer gets both in one transfer, and no
// window area is touched.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/futex.h"
#include "exec/host/shared_windows.h"
#include "exec/host/shared_windows_layout.h"

namespace braid {

using windows::kCastDepth;
using windows::SmallLine;

void NodeWindows::wakeSleepers(Header* h) {
  // Orders the caller's stores before the sleeper count is read; a peer about to
  // sleep raises the count before it checks the flag again (NodeWindows::waitOn).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h->sleepers.load(std::memory_order_relaxed) != 0) {
    h->wakeSeq.fetch_add(1, std::memory_order_release);
    futexWakeAll(&h->wakeSeq);
  }
}

uint64_t NodeWindows::slowestReady() const {
  uint64_t slowest = UINT64_MAX;
  for (int q = 0; q < comm_.nranks(); ++q) {
    if (q != comm_.rank()) {
      slowest = std::min(slowest, header(q)->ready.load(std::memory_order_acquire));
    }
  }
  return slowest;
}

// Every rank writes its line of half e % 2 and reads every peer's; rounds e and e + 2
// share a line, and beginRound keeps a rank from writing it again before every peer
// has started round e + 1 (so has read round e).
Status NodeWindows::allReduceSmall(const algo::CollArgs& args, const ExecBuffers& b,
                                   const OpDesc& desc) {
  const int n = comm_.nranks();
  const int me = comm_.rank();
  BRAID_ASSIGN_OR_RETURN(uint64_t e, beginRound(true, desc));
  const int half = static_cast<int>(e & 1);
  Header* h = header(me);
  SmallLine& line = h->small[half];
  std::memcpy(line.data, b.input, args.count * args.elemSize);
  line.epoch.store(e, std::memory_order_release);
  h->ready.store(e, std::memory_order_release);  // for rounds that check `ready`
  wakeSleepers(h);
  for (int i = 1; i < n; ++i) {
    const int q = (me + i) % n;
    BRAID_TRY(waitOn(q, header(q)->small[half].epoch, Flag::kReady, e, desc));
  }
  allReady_ = e;
  // Every peer has published round e, so has read this rank's line of round e - 1:
  // take it back for writing now, not at the next call's store.
  __builtin_prefetch(&h->small[half ^ 1], 1);
  for (int q = 0; q < n; ++q) data_[q] = header(q)->small[half].data;
  reduceAll(static_cast<char*>(b.output), nullptr, data_, args.count, desc);
  return Status::ok();
}

// The root writes line e % kCastDepth of its header and returns: it waits only before
// overwriting a line some peer has not read, that is until every peer has started
// round e - kCastDepth + 1. A peer publishes ready = e as it starts round e (it has
// read every line before), waits for the line's epoch and copies the data out. So the
// root runs up to kCastDepth calls ahead of the slowest peer, and peers sharing a core
// with it catch up several calls per time slice, where a hand-off per call would cost
// a context switch each (4 ranks on 2 cores: 4.5 us per 8 B broadcast).
Status NodeWindows::broadcastSmall(const algo::CollArgs& args, const ExecBuffers& b,
                                   const OpDesc& desc) {
  const size_t bytes = args.count * args.elemSize;
  const uint64_t e = ++epoch_;
  Header* root = header(args.root);
  SmallLine& line = root->cast[e % kCastDepth];
  if (comm_.rank() != args.root) {
    publish(Flag::kReady, e);
    BRAID_TRY(waitOn(args.root, line.epoch, Flag::kReady, e, desc));
    std::memcpy(b.output, line.data, bytes);
    return Status::ok();
  }
  if (e >= kCastDepth && allReady_ + kCastDepth <= e) {
    BRAID_TRY(waitAll(Flag::kReady, e - kCastDepth + 1, desc));
    allReady_ = slowestReady();
  }
  std::memcpy(line.data, b.input, bytes);
  if (!args.inPlace) std::memcpy(b.output, b.input, bytes);
  line.epoch.store(e, std::memory_order_release);
  root->ready.store(e, std::memory_order_release);  // for rounds that check `ready`
  wakeSleepers(root);
  return Status::ok();
}

}  // namespace braid
