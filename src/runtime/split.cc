// braidCommSplit: ranks with the same color form a communicator ordered by
// (key, parent rank). The parent all-gathers (color, key); the lowest parent
// rank of each color starts a rendezvous and the parent all-gathers its unique
// id; then each group bootstraps on its own.
// braidCommShrink: the lowest surviving rank starts a rendezvous and passes
// its unique id to the other survivors over one-off links (Comm::passBytes),
// which need neither the dead ranks nor the parent's data connections.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/bootstrap.h"
#include "core/env.h"
#include "runtime/communicator_ops.h"
#include "runtime/device_calls.h"
#include "runtime/host_calls.h"

namespace braid {
namespace {

Status allGatherBytes(braidComm* comm, const void* mine, void* all, size_t bytes) {
  waitForStagedCalls(comm);  // host collectives in issue order on every rank
  Call op;
  op.collective = algo::Collective::kAllGather;
  op.send = mine;
  op.recv = all;
  op.count = bytes;
  op.datatype = braidUint8;
  return runOps(comm, {op});
}

}  // namespace

Status splitComm(braidComm* comm, int color, int key, braidComm_t* newcomm, braidConfig_t* config) {
  const int n = comm->comm->nranks();
  const int me = comm->comm->rank();
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * static_cast<size_t>(n));
  BRAID_TRY(allGatherBytes(comm, mine, all.data(), sizeof(mine)));
  std::vector<int> members;  // parent ranks of my color, in new-rank order
  for (int r = 0; r < n; ++r) {
    if (color != BRAID_SPLIT_NOCOLOR && all[2 * r] == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  // The first member of each group serves its rendezvous.
  braidUniqueId id{};
  std::shared_ptr<RootHandle> root;
  if (!members.empty() && members.front() == me) {
    UniqueIdData data;
    data.secret = randomSecret();
    SockAddr bind = comm->comm->peer(me).listenAddr;
    bind.setPort(0);
    BRAID_ASSIGN_OR_RETURN(root, startRootService(bind, data.secret, comm->comm->config().timeoutMs,
                                                  &data.root));
    packUniqueId(data, &id);
  }
  std::vector<braidUniqueId> ids(n);
  BRAID_TRY(allGatherBytes(comm, &id, ids.data(), sizeof(id)));
  if (members.empty()) {
    *newcomm = nullptr;
    return Status::ok();
  }
  const int newRank = static_cast<int>(std::find(members.begin(), members.end(), me) -
                                       members.begin());
  braidConfig_t inherited = BRAID_CONFIG_INITIALIZER;
  if (config == nullptr) {
    inherited.timeoutMs = static_cast<int>(comm->comm->config().timeoutMs);
    config = &inherited;
  }
  Status st = initComm(newcomm, static_cast<int>(members.size()), ids[members.front()], newRank,
                       config);
  if (root) root->wait();
  return st;
}

Status shrinkComm(braidComm* comm, const int* exclude, int excludeCount, braidComm_t* newcomm,
              braidConfig_t* config, int flags) {
  Comm& c = *comm->comm;
  const int n = c.nranks();
  std::vector<bool> gone(n, false);
  for (int i = 0; i < excludeCount; ++i) {
    if (exclude[i] < 0 || exclude[i] >= n) {
      return invalidArgument("excludeRanksList[" + std::to_string(i) + "] = " +
                             std::to_string(exclude[i]) + " is outside 0.." + std::to_string(n - 1));
    }
    gone[exclude[i]] = true;
  }
  if (gone[c.rank()]) {
    return invalidUsage("this rank (" + std::to_string(c.rank()) +
                        ") is in excludeRanksList; only surviving ranks call braidCommShrink");
  }
  std::vector<int> members;
  for (int r = 0; r < n; ++r) {
    if (!gone[r]) members.push_back(r);
  }
  // The parent's operations in flight end first (at once with BRAID_SHRINK_ABORT).
  if (flags & BRAID_SHRINK_ABORT) c.requestAbort();
  waitForStagedCalls(comm);  // at once after an abort
  std::lock_guard<std::mutex> lock(comm->opMu);
  const int leader = members.front();
  std::string packed;
  std::shared_ptr<RootHandle> root;
  if (c.rank() == leader) {
    UniqueIdData data;
    data.secret = randomSecret();
    SockAddr bind = c.peer(leader).listenAddr;
    bind.setPort(0);
    BRAID_ASSIGN_OR_RETURN(root, startRootService(bind, data.secret, c.config().timeoutMs,
                                                  &data.root));
    braidUniqueId id;
    packUniqueId(data, &id);
    packed.assign(reinterpret_cast<const char*>(&id), sizeof(id));
  }
  BRAID_ASSIGN_OR_RETURN(packed, c.passBytes(leader, members, packed, Deadline(c.config().timeoutMs)));
  if (packed.size() != sizeof(braidUniqueId)) return remoteError("shrink: malformed unique id");
  braidUniqueId id;
  std::memcpy(&id, packed.data(), sizeof(id));
  const int newRank = static_cast<int>(std::find(members.begin(), members.end(), c.rank()) -
                                       members.begin());
  braidConfig_t inherited = BRAID_CONFIG_INITIALIZER;
  if (config == nullptr) {
    inherited.timeoutMs = static_cast<int>(c.config().timeoutMs);
    config = &inherited;
  }
  Status st = initComm(newcomm, static_cast<int>(members.size()), id, newRank, config);
  if (root) root->wait();
  return st;
}

}  // namespace braid
