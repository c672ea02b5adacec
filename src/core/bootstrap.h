// Bootstrap: the TCP rendezvous that turns a unique id into a table of peers.
//
// The unique id carries the root's address and a random secret. A root service
// (a thread in the process that created the id) accepts one hello per rank,
// drops any connection that does not present the secret (and logs it), and
// when every rank has arrived sends each the table of all ranks' PeerInfo. If
// the deadline passes first it tells the ranks that did arrive which ranks are
// missing. The wire formats are fixed-size and checked field by field.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "braid/braid.h"
#include "core/transport.h"

namespace braid {

using Secret = std::array<uint8_t, 16>;

struct UniqueIdData {
  SockAddr root;
  Secret secret{};
};

void packUniqueId(const UniqueIdData& data, braidUniqueId* id);
// Fails when the bytes were not made by packUniqueId.
Expected<UniqueIdData> unpackUniqueId(const braidUniqueId& id);

Secret randomSecret();
std::string secretToHex(const Secret& secret);
Expected<Secret> secretFromHex(const std::string& hex);
// Constant-time comparison.
bool secretEquals(const uint8_t* a, const uint8_t* b);

// A running root service; wait() returns once it has answered every rank.
class RootHandle {
 public:
  virtual ~RootHandle() = default;
  virtual void wait() = 0;
};

// Starts the root service listening on `bindAddr` (port 0 picks one) in a
// thread that ends once the job has joined or timed out. `bound` gets the
// address ranks must connect to. Dropping the handle detaches the thread.
Expected<std::shared_ptr<RootHandle>> startRootService(const SockAddr& bindAddr,
                                                       const Secret& secret, int64_t timeoutMs,
                                                       SockAddr* bound);

// Joins the rendezvous as `rank` of `nranks` and returns every rank's info,
// indexed by rank. `self.nodeBlob` travels too; the result carries each host
// id's blob on its lowest rank only (see PeerInfo).
Expected<std::vector<PeerInfo>> bootstrapJoin(const UniqueIdData& id, int rank, int nranks,
                                              const PeerInfo& self, int64_t timeoutMs);

// The root's reply to a joining rank, checked field by field: nranks
// WirePeers, then per rank a 32-bit length and its node blob. Exposed for the
// fuzzer (fuzz/).
Expected<std::vector<PeerInfo>> parseBootstrapTable(const std::string& payload, int nranks);

// Wire form of PeerInfo, shared by bootstrap and peer links.
struct WirePeer {
  int32_t rank;
  int32_t pid;
  char hostId[128];
  char hostName[64];
  char place[64];
  uint32_t addrLen;
  uint8_t addr[128];
};
WirePeer toWire(const PeerInfo& info);
Expected<PeerInfo> fromWire(const WirePeer& wire);

}  // namespace braid
