// NodeWindows::setup: making, exchanging and mapping the node's shared window regions
// (exec/host/shared_windows.h), once per communicator, with every rank agreeing on the outcome.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/logging.h"
#include "exec/host/shared_windows.h"
#include "exec/host/shared_windows_layout.h"

namespace braid {

using algo::Algorithm;
using algo::Collective;
using windows::kNameBytes;
using windows::kWindowMagic;

// Every rank makes its region and all-gathers the names (an empty name: this
// rank could not); then maps the peers' and all-gathers whether that worked.
// Only when every rank succeeded are the windows on, so all ranks agree.
Status NodeWindows::setup(const OpDesc& desc) {
  const int n = comm_.nranks();
  const int me = comm_.rank();
  std::vector<int> all;
  for (int p = 0; p < n; ++p) {
    if (p != me) all.push_back(p);
  }
  Deadline deadline = comm_.deadline();
  Status connected = comm_.connectPeers(all, deadline);
  if (!connected.isOk()) {
    // A peer that left explains a broken connection better than the break.
    if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
    return connected.withContext(desc.describe() + ": ");
  }
  Transport* shm = nullptr;
  bool usable = true;
  for (int p : all) {
    Transport* t = comm_.transportOf(p);
    if (shm == nullptr) shm = t;
    usable = usable && t == shm;
  }
  std::string why;
  if (usable) {
    Expected<std::unique_ptr<SharedRegion>> r = shm->createRegion(regionBytes_);
    if (r.isOk()) {
      mine_ = std::move(r).value();
    } else {
      why = r.status().message();
    }
  } else {
    why = "peers connect over different transports";
  }
  // Round 1: names.
  auto exchange = [&](const void* mine, void* every, size_t bytes) {
    algo::CollArgs a;
    a.collective = Collective::kAllGather;
    a.rank = me;
    a.nranks = n;
    a.count = bytes;
    a.elemSize = 1;
    a.maxStepElems = std::max<uint64_t>(1, comm_.config().sliceBytes * (comm_.config().slots / 2));
    algo::Schedule s = algo::buildSchedule(Algorithm::kRing, a);
    OpDesc d = desc;
    d.algorithm = "window setup";
    d.bytes = bytes;
    d.datatype = braidUint8;
    return fifo_.run(s, ExecBuffers{mine, every}, d);
  };
  char name[kNameBytes] = {};
  if (mine_ != nullptr && mine_->name().size() < kNameBytes) {
    std::memcpy(name, mine_->name().data(), mine_->name().size());
  }
  std::vector<char> names(kNameBytes * n);
  BRAID_TRY(exchange(name, names.data(), kNameBytes));
  bool ok = mine_ != nullptr;
  peers_.resize(n);
  bases_.assign(n, nullptr);
  for (int p = 0; p < n && ok; ++p) {
    if (p == me) continue;
    std::string theirs(&names[kNameBytes * p], strnlen(&names[kNameBytes * p], kNameBytes));
    if (theirs.empty() || theirs.size() == kNameBytes) {
      ok = false;
      why = "rank " + std::to_string(p) + " has no window";
      break;
    }
    Expected<std::unique_ptr<SharedRegion>> r = shm->openRegion(theirs, regionBytes_);
    if (!r.isOk()) {
      ok = false;
      why = r.status().message();
      break;
    }
    peers_[p] = std::move(r).value();
    bases_[p] = static_cast<char*>(peers_[p]->base());
  }
  if (ok) {
    bases_[me] = static_cast<char*>(mine_->base());
    Header* h = new (bases_[me]) Header();
    h->magic = kWindowMagic;
    h->rank = me;
    h->chunkBytes = chunk_;
  }
  // Round 2: did every rank map every region? (Also: every name is mapped
  // once this returns, so the creators unlink.)
  char mineOk = ok ? 1 : 0;
  std::vector<char> oks(n);
  BRAID_TRY(exchange(&mineOk, oks.data(), 1));
  if (mine_ != nullptr) mine_->unlinkName();
  for (int p = 0; p < n; ++p) {
    if (oks[p] == 1) continue;
    ok = false;
    if (why.empty()) why = "rank " + std::to_string(p) + " could not map the windows";
  }
  if (!ok) {
    BRAID_INFO("rank %d: shared windows are off, direct algorithms use FIFOs: %s", me, why.c_str());
    peers_.clear();
    bases_.clear();
    mine_.reset();
    state_ = State::kOff;
    return Status::ok();
  }
  state_ = State::kOn;
  singleCopy_ = comm_.config().singleCopyMinBytes != UINT64_MAX;
  for (int p : all) singleCopy_ = singleCopy_ && comm_.endpoint(p)->canPostAt();
  BRAID_INFO("rank %d: shared windows on (%zu B per round per rank%s)", me, chunk_,
             singleCopy_ ? ", private inputs read by single copy" : "");
  return Status::ok();
}

}  // namespace braid
