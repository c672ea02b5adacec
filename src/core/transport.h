// The transport interface: what the communicator and executors need from a
// way of moving bytes between two ranks. Implementations live in transports/
// (shm, socket); they depend on core, never the other way round.
//
// An Endpoint is one connection to one peer, both directions, shaped as two
// FIFOs of fixed-size slots (Comm::sliceBytes each). The sender fills a slot
// and posts it; the receiver reads slots in order and releases them. Sizes are
// carried with each slot so a receiver can check that it got what its schedule
// expects. Endpoint calls never block except wait(); an Endpoint is used by one
// thread at a time (the one running the communicator's operation).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/net.h"
#include "core/status.h"

namespace braid {

// What a rank tells every other rank at bootstrap.
struct PeerInfo {
  int rank = -1;
  int pid = 0;
  std::string hostId;    // ranks with equal ids share a node (and /dev/shm)
  std::string hostName;  // for messages
  SockAddr listenAddr;   // where this rank accepts peer connections
  // Opaque to core, written and read by the API layer: where the rank runs in
  // its node ("numa=0", at most 63 bytes), and the description of its node
  // (topology XML, at most kMaxNodeBlob bytes). Bootstrap hands every rank
  // each node's description once: on the node's lowest rank, empty on the rest.
  std::string place;
  std::string nodeBlob;
};
constexpr size_t kMaxNodeBlob = 1u << 20;

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Send side: a free slot of sliceBytes to fill, or nullptr when the FIFO is
  // full. sendPost publishes the slot with `bytes` of payload.
  virtual void* sendSlot() = 0;
  virtual Status sendPost(size_t bytes) = 0;
  // Whether another process reads the send slots where they lie (shm): the
  // executor then fills them with streaming stores (exec/stream_copy.h).
  virtual bool slotsShared() const { return false; }
  // Receive side: the next filled slot and its size, or nullptr when none has
  // arrived. recvRelease hands the slot back to the sender.
  virtual const void* recvSlot(size_t* bytes) = 0;
  virtual void recvRelease() = 0;

  // Single-copy transfers (shm over cross-memory attach, where the connect-time
  // probe found the peer may read this process's memory and the reverse). A
  // sender with a free slot (sendSlot() not null) may post, instead of payload,
  // where `bytes` of its own memory lie (sendPostAt); the receiver copies them
  // from there (recvRead) and releases the slot as usual. The sender must leave
  // those bytes unchanged until sendsConsumed(). The FIFO order is unchanged.
  virtual bool canPostAt() const { return false; }
  virtual Status sendPostAt(const void* at, size_t bytes) {
    return internalError("this transport cannot post where bytes lie");
  }
  // Whether the receiver has released every slot posted so far.
  virtual bool sendsConsumed() const { return true; }
  // For the slot recvSlot() returned: whether it describes bytes in the
  // sender's memory (its pointer must not be read then) ...
  virtual bool recvAtPeer() const { return false; }
  // ... and copies [offset, offset + bytes) of them into `dst`. An error means
  // the sender is gone or posted memory it does not have.
  virtual Status recvRead(void* dst, size_t offset, size_t bytes) {
    return internalError("this transport cannot read a peer's memory");
  }
  // Where canPostAt(): copies `bytes` at `at` in the peer's memory, an address the
  // peer published some other way (a shared window's header), into `dst`.
  virtual Status readAt(uint64_t at, void* dst, size_t bytes) {
    return internalError("this transport cannot read a peer's memory");
  }

  // Moves bytes that are in flight (socket: to and from the kernel). An error
  // means the connection is broken.
  virtual Status progress() = 0;
  // True while posted sends still sit in local buffers.
  virtual bool sendPending() const = 0;
  // A descriptor the executor may poll() on, or -1 (memory-based transports).
  virtual int pollFd() const = 0;
  // Blocks until the receive side may have data (wantRecv) or the send side
  // room (wantSend), or timeoutUs passes. Spurious returns are allowed.
  virtual void wait(bool wantRecv, bool wantSend, int timeoutUs) = 0;
};

// Memory one rank exposes to the peers of its node for load/store access
// (shm): the creator makes it and passes name() to peers over the
// communicator; each peer opens it; the creator unlinks the name once every
// peer has it mapped. Unmapped when destroyed.
class SharedRegion {
 public:
  virtual ~SharedRegion() = default;
  virtual void* base() const = 0;
  virtual size_t bytes() const = 0;
  virtual const std::string& name() const = 0;
  // Removes the name (the mapping stays); idempotent.
  virtual void unlinkName() = 0;
  // In a child just forked: where this region lies under a caller's buffer (a
  // registration), gives the child copy-on-write pages in its place, so the
  // child's writes stay its own, and lets go of the region (no unlink, no
  // unmap). True if it did; other regions stay shared with the child.
  virtual bool privatizeInForkedChild() { return false; }
};

// What one read of another process's memory costs on this node, next to a plain
// copy of the same bytes: the shm transport measures both once per process
// (Transport::singleCopyProbe), and the cost model prices single-copy sends from
// them (select/cost_model.h).
struct SingleCopyProbe {
  double latencyUs = 0;   // a one-line read
  double gbps = 0;        // a slice-sized read (GB/s, 1e9 bytes/s)
  double copyGBps = 0;    // memcpy of the same slice, for the comparison
  size_t probeBytes = 0;  // the slice size both were measured at
};

// Settings a transport needs to build endpoints; equal on both sides.
struct ConnectOptions {
  size_t sliceBytes = 0;
  int slots = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  // Builds an endpoint over `linkFd`, an authenticated TCP connection to the
  // peer held by both sides (blocking). The transport takes ownership of the fd.
  virtual Expected<std::unique_ptr<Endpoint>> connect(int linkFd, const PeerInfo& self,
                                                      const PeerInfo& peer,
                                                      const ConnectOptions& options,
                                                      const Deadline& deadline) = 0;

  // Load/store access for peers on this node (transports that map memory):
  // a zero-filled region of `bytes`, or a peer's region by its name (whose
  // size must be `bytes`). Others answer braidInvalidUsage.
  virtual Expected<std::unique_ptr<SharedRegion>> createRegion(size_t bytes) {
    return invalidUsage(std::string(name()) + " cannot share memory");
  }
  virtual Expected<std::unique_ptr<SharedRegion>> openRegion(const std::string& regionName,
                                                             size_t bytes) {
    return invalidUsage(std::string(name()) + " cannot share memory");
  }
  // Re-backs this process's pages [at, at + bytes) (page-aligned, readable and
  // writable) with a region peers open by name, at the same address and with the
  // same contents; destroying the region backs them with private memory again,
  // contents kept. Nothing may use the pages meanwhile.
  virtual Expected<std::unique_ptr<SharedRegion>> shareRegion(void* at, size_t bytes) {
    return invalidUsage(std::string(name()) + " cannot share memory");
  }

  // Single-copy transfers (Endpoint::canPostAt): what one costs here, measured
  // the first time anyone asks (a few hundred microseconds, once per process),
  // or nullptr where this transport has none, BRAID_SHM_CMA=0 turned them off,
  // or the system refuses them. Whether a pair of ranks may use them is probed
  // again when the pair connects.
  virtual const SingleCopyProbe* singleCopyProbe() { return nullptr; }
};

}  // namespace braid
