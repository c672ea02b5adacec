#include "transports/shm/shm_transport.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/bootstrap.h"
#include "core/futex.h"
#include "core/logging.h"
#include "core/proc_maps.h"
#include "core/shm_segment_name.h"
#include "transports/shm/single_copy.h"

namespace braid::transport::shm {
namespace {

constexpr uint32_t kFifoMagic = 0x42534846;  // "BSHF"

// A slot's size, and where its bytes lie in the sender's memory when it carries
// none (Endpoint::sendPostAt; 0 when they are in the slot).
struct alignas(64) SlotSize {
  uint64_t bytes;
  uint64_t at;
};

struct FifoHeader {
  uint32_t magic;
  uint32_t slots;
  uint64_t sliceBytes;
  alignas(64) std::atomic<uint64_t> head;  // slots posted by the sender
  WakeSignal dataSignal;                   // the receiver sleeps here
  alignas(64) std::atomic<uint64_t> tail;  // slots released by the receiver
  WakeSignal spaceSignal;                  // the sender sleeps here
};

size_t dataOffset(int slots) {
  size_t raw = sizeof(FifoHeader) + sizeof(SlotSize) * static_cast<size_t>(slots);
  return (raw + 4095) & ~size_t{4095};
}

size_t segmentBytes(const ConnectOptions& o) {
  return dataOffset(o.slots) + o.sliceBytes * static_cast<size_t>(o.slots);
}

// A mapped FIFO segment; unmaps when destroyed.
struct Mapping {
  void* base = MAP_FAILED;
  size_t bytes = 0;
  FifoHeader* header() const { return static_cast<FifoHeader*>(base); }
  SlotSize* sizes() const { return reinterpret_cast<SlotSize*>(header() + 1); }
  char* data(int slots) const { return static_cast<char*>(base) + dataOffset(slots); }
  ~Mapping() {
    if (base != MAP_FAILED) munmap(base, bytes);
  }
};

// "/braid-<creator pid>-<pid namespace>-<128 random bits>" (core/shm_segment_name.h): unguessable,
// and a later process (sweepDeadSegments) or braidrun can remove what a killed rank left.
std::string randomName() { return "/" + shmSegmentPrefix(getpid()) + secretToHex(randomSecret()); }

Status createFifo(const std::string& name, const ConnectOptions& o, Mapping* m) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return systemError("shm_open(" + name + ") in /dev/shm");
  size_t bytes = segmentBytes(o);
  // Reserve the pages now: a full /dev/shm must be an error here, not a
  // SIGBUS in the middle of a collective.
  int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    close(fd);
    shm_unlink(name.c_str());
    if (err == ENOSPC) {
      return Status(braidSystemError,
                    "/dev/shm is full: a shared-memory FIFO of " + std::to_string(bytes) +
                        " bytes does not fit (Docker's default is 64 MiB: run the container with "
                        "--shm-size=1g, or lower BRAID_SHM_SLOTS / BRAID_SHM_SLOT_BYTES)");
    }
    return systemError("posix_fallocate of " + std::to_string(bytes) + " bytes in /dev/shm", err);
  }
  m->base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m->base == MAP_FAILED) {
    shm_unlink(name.c_str());
    return systemError("mmap of the shared-memory FIFO");
  }
  m->bytes = bytes;
  FifoHeader* h = new (m->base) FifoHeader();
  h->magic = kFifoMagic;
  h->slots = static_cast<uint32_t>(o.slots);
  h->sliceBytes = o.sliceBytes;
  return Status::ok();
}

Status openFifo(const std::string& name, const ConnectOptions& o, Mapping* m) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return systemError("shm_open(" + name + ") of the peer's FIFO (is /dev/shm shared "
                       "between the two processes? set BRAID_HOST_ID to tell nodes apart)");
  }
  shm_unlink(name.c_str());  // both sides have it mapped once this returns
  size_t bytes = segmentBytes(o);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return remoteError("the peer's shared-memory FIFO has an unexpected size");
  }
  m->base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m->base == MAP_FAILED) return systemError("mmap of the peer's FIFO");
  m->bytes = bytes;
  if (m->header()->magic != kFifoMagic || m->header()->slots != static_cast<uint32_t>(o.slots) ||
      m->header()->sliceBytes != o.sliceBytes) {
    return remoteError("the peer's shared-memory FIFO has a different layout");
  }
  return Status::ok();
}

class ShmEndpoint : public Endpoint {
 public:
  ShmEndpoint(const ConnectOptions& o, std::unique_ptr<Mapping> in, std::unique_ptr<Mapping> out,
              pid_t peerPid, bool singleCopy)
      : slots_(o.slots),
        slice_(o.sliceBytes),
        in_(std::move(in)),
        out_(std::move(out)),
        peerPid_(peerPid),
        singleCopy_(singleCopy) {}

  bool slotsShared() const override { return true; }
  void* sendSlot() override {
    FifoHeader* h = out_->header();
    if (sendHead_ - cachedTail_ >= static_cast<uint64_t>(slots_)) {
      cachedTail_ = h->tail.load(std::memory_order_acquire);
      if (sendHead_ - cachedTail_ >= static_cast<uint64_t>(slots_)) return nullptr;
    }
    return out_->data(slots_) + (sendHead_ % slots_) * slice_;
  }

  Status sendPost(size_t bytes) override { return post(bytes, 0); }

  bool canPostAt() const override { return singleCopy_; }
  Status sendPostAt(const void* at, size_t bytes) override {
    if (!singleCopy_ || at == nullptr) return internalError("shm: sendPostAt without single copy");
    return post(bytes, reinterpret_cast<uint64_t>(at));
  }
  bool sendsConsumed() const override {
    return out_->header()->tail.load(std::memory_order_acquire) == sendHead_;
  }

  Status post(size_t bytes, uint64_t at) {
    FifoHeader* h = out_->header();
    out_->sizes()[sendHead_ % slots_] = SlotSize{bytes, at};
    ++sendHead_;
    h->head.store(sendHead_, std::memory_order_release);
    h->dataSignal.notify();
    return Status::ok();
  }

  const void* recvSlot(size_t* bytes) override {
    FifoHeader* h = in_->header();
    if (recvTail_ == cachedHead_) {
      cachedHead_ = h->head.load(std::memory_order_acquire);
      if (recvTail_ == cachedHead_) return nullptr;
    }
    const SlotSize& size = in_->sizes()[recvTail_ % slots_];
    *bytes = size.bytes;
    recvAt_ = size.at;
    return in_->data(slots_) + (recvTail_ % slots_) * slice_;
  }

  bool recvAtPeer() const override { return recvAt_ != 0; }
  Status recvRead(void* dst, size_t offset, size_t bytes) override {
    // Only a peer that passed the pair probe posts addresses (its flag says it may).
    if (recvAt_ == 0 || !singleCopy_) return internalError("shm: recvRead of a slot with payload");
    return readPeer(peerPid_, recvAt_ + offset, dst, bytes);
  }
  Status readAt(uint64_t at, void* dst, size_t bytes) override {
    if (!singleCopy_ || at == 0) return internalError("shm: readAt without single copy");
    return readPeer(peerPid_, at, dst, bytes);
  }

  void recvRelease() override {
    FifoHeader* h = in_->header();
    ++recvTail_;
    h->tail.store(recvTail_, std::memory_order_release);
    h->spaceSignal.notify();
  }

  Status progress() override { return Status::ok(); }
  bool sendPending() const override { return false; }
  int pollFd() const override { return -1; }

  void wait(bool wantRecv, bool wantSend, int timeoutUs) override {
    if (wantRecv) {
      FifoHeader* h = in_->header();
      h->dataSignal.wait([&] { return h->head.load(std::memory_order_acquire) != recvTail_; },
                         timeoutUs);
    } else if (wantSend) {
      // Room in a full FIFO, or (single copy) the release of a posted slot: both
      // move the tail on.
      FifoHeader* h = out_->header();
      const uint64_t seen = h->tail.load(std::memory_order_acquire);
      if (seen == sendHead_) return;
      h->spaceSignal.wait([&] { return h->tail.load(std::memory_order_acquire) != seen; },
                          timeoutUs);
    }
  }

 private:
  const int slots_;
  const size_t slice_;
  std::unique_ptr<Mapping> in_;   // the FIFO this rank reads (it created it)
  std::unique_ptr<Mapping> out_;  // the FIFO the peer reads
  uint64_t sendHead_ = 0;
  uint64_t cachedTail_ = 0;
  uint64_t recvTail_ = 0;
  uint64_t cachedHead_ = 0;
  uint64_t recvAt_ = 0;  // the current receive slot's SlotSize::at
  const pid_t peerPid_;
  const bool singleCopy_;  // both sides passed the pair probe (connect)
};

// A region this rank made or a peer's, mapped; see SharedRegion.
class ShmRegion : public SharedRegion {
 public:
  ShmRegion(std::string name, bool owner) : name_(std::move(name)), owner_(owner) {}
  ~ShmRegion() override {
    unlinkName();
    if (base_ == MAP_FAILED) return;
    if (shared_) {
      privatize();  // the caller's buffer stays mapped either way
    } else {
      munmap(base_, bytes_);
    }
  }
  void* base() const override { return base_; }
  size_t bytes() const override { return bytes_; }
  const std::string& name() const override { return name_; }
  void unlinkName() override {
    if (owner_ && !unlinked_) shm_unlink(name_.c_str());
    unlinked_ = true;
  }

  Status create(size_t bytes) {
    int fd = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return systemError("shm_open(" + name_ + ") in /dev/shm");
    int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (err != 0) {
      close(fd);
      if (err == ENOSPC) {
        return Status(braidSystemError,
                      "/dev/shm is full: a shared window of " + std::to_string(bytes) +
                          " bytes does not fit (Docker's default is 64 MiB: run the container "
                          "with --shm-size=1g, or lower BRAID_SHM_WINDOW_BYTES)");
      }
      return systemError("posix_fallocate of " + std::to_string(bytes) + " bytes in /dev/shm", err);
    }
    return map(fd, bytes);
  }

  // The region, filled from [at, at + bytes), then mapped again in that range's
  // place (MAP_FIXED replaces it in one step), so the caller's address keeps
  // working. mmap, not mremap: UCX's memory hooks pass mremap no new address.
  Status share(void* at, size_t bytes) {
    BRAID_TRY(create(bytes));
    std::memcpy(base_, at, bytes);
    int fd = shm_open(name_.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return systemError("shm_open(" + name_ + ") to share a user buffer");
    struct stat st {};
    if (fstat(fd, &st) == 0) inode_ = st.st_ino;
    void* there = mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    close(fd);
    if (there == MAP_FAILED) return systemError("mmap of a shared region onto a user buffer");
    munmap(base_, bytes);
    base_ = there;
    shared_ = true;
    return Status::ok();
  }

  // The child's pages: a private mapping of the region's file (copy on write;
  // a page the child has not written shows the parent's later writes), else a
  // private copy. Nothing where the region is no longer mapped (stillMapped).
  bool privatizeInForkedChild() override {
    if (!shared_ || base_ == MAP_FAILED) return false;
    if (stillMapped()) {
      int fd = shm_open(name_.c_str(), O_RDONLY | O_CLOEXEC, 0);
      bool mapped = false;
      if (fd >= 0) {
        mapped = mmap(base_, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) !=
                 MAP_FAILED;
        close(fd);
      }
      if (!mapped) copyToPrivatePages();
    }
    base_ = MAP_FAILED;  // the parent's region: this process no longer unmaps or unlinks it
    owner_ = false;
    return true;
  }

  Status open(size_t bytes) {
    int fd = shm_open(name_.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return systemError("shm_open(" + name_ + ") of a peer's shared window");
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
      close(fd);
      return remoteError("a peer's shared window has an unexpected size");
    }
    return map(fd, bytes);
  }

 private:
  Status map(int fd, size_t bytes) {
    base_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    close(fd);
    if (base_ == MAP_FAILED) return systemError("mmap of a shared window");
    bytes_ = bytes;
    return Status::ok();
  }

  // Whether this region's file is still what is mapped under the whole of
  // [base_, base_ + bytes_). A caller who freed the buffer before deregistering
  // may have it unmapped, or other memory placed there since (heap trimmed and
  // grown again, a new mmap): that memory is not this region's to replace.
  bool stillMapped() const {
    const auto lo = reinterpret_cast<uintptr_t>(base_);
    return mapsCover(lo, lo + bytes_,
                     [this](const MapsEntry& e) { return e.perms[3] == 's' && e.inode == inode_; });
  }

  // Private pages with this region's contents in its place (where there is no
  // memory for them, the region's pages stay, its name gone). Nothing changes
  // where the region is no longer mapped there (stillMapped).
  void privatize() {
    if (!stillMapped()) {
      BRAID_WARN("a registered buffer was unmapped before braidCommDeregister; its address "
                 "range is left as it is");
      return;
    }
    copyToPrivatePages();
  }

  // privatize() once the region is known to be mapped there.
  void copyToPrivatePages() {
    void* copy = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) return;
    std::memcpy(copy, base_, bytes_);
    if (mmap(base_, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
             0) != MAP_FAILED) {
      std::memcpy(base_, copy, bytes_);
    }
    munmap(copy, bytes_);
  }

  std::string name_;
  bool owner_;
  bool shared_ = false;  // share(): the pages sit in a caller's buffer
  bool unlinked_ = false;
  ino_t inode_ = 0;  // share(): the region's file, to find it in /proc/self/maps
  void* base_ = MAP_FAILED;
  size_t bytes_ = 0;
};

// What each side sends at connect: its FIFO's name, and for the single-copy
// pair probe a random token and where it lies in the sender's memory (0: off).
struct NameMsg {
  char name[64];
  uint64_t tokenAt;
  Secret token;
};

// Ack bits of a connect.
constexpr char kMapped = 1;
constexpr char kReadsPeer = 2;  // this side read the peer's token by process_vm_readv

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "shm"; }
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return self.hostId == peer.hostId;
  }
  Expected<std::unique_ptr<Endpoint>> connect(int linkFd, const PeerInfo& self,
                                              const PeerInfo& peer, const ConnectOptions& o,
                                              const Deadline& deadline) override;

  Expected<std::unique_ptr<SharedRegion>> createRegion(size_t bytes) override {
    auto r = std::make_unique<ShmRegion>(randomName(), true);
    BRAID_TRY(r->create(bytes));
    return std::unique_ptr<SharedRegion>(std::move(r));
  }
  Expected<std::unique_ptr<SharedRegion>> shareRegion(void* at, size_t bytes) override {
    auto r = std::make_unique<ShmRegion>(randomName(), true);
    BRAID_TRY(r->share(at, bytes));
    return std::unique_ptr<SharedRegion>(std::move(r));
  }
  const SingleCopyProbe* singleCopyProbe() override { return shm::singleCopyProbe(); }

  Expected<std::unique_ptr<SharedRegion>> openRegion(const std::string& regionName,
                                                     size_t bytes) override {
    if (regionName.compare(0, 7, "/braid-") != 0 || regionName.find('/', 1) != std::string::npos) {
      return remoteError("a peer sent a malformed shared-window name");
    }
    auto r = std::make_unique<ShmRegion>(regionName, false);
    BRAID_TRY(r->open(bytes));
    return std::unique_ptr<SharedRegion>(std::move(r));
  }
};

Expected<std::unique_ptr<Endpoint>> ShmTransport::connect(int linkFd, const PeerInfo& self,
                                                          const PeerInfo& peer,
                                                          const ConnectOptions& o,
                                                          const Deadline& deadline) {
  auto in = std::make_unique<Mapping>();
  auto out = std::make_unique<Mapping>();
  std::string mine = randomName();
  Status st = createFifo(mine, o, in.get());
  NameMsg msg{};
  NameMsg theirs{};
  std::memcpy(msg.name, mine.c_str(), mine.size());
  // Stays alive (and unchanged) until the peer's ack: it probes before it acks.
  const Secret token = randomSecret();
  const bool singleCopy = singleCopyEnabled();
  if (singleCopy) {
    msg.tokenAt = reinterpret_cast<uint64_t>(token.data());
    msg.token = token;
  }
  if (st.isOk()) st = sendAll(linkFd, &msg, sizeof(msg), deadline, "shm name exchange");
  if (st.isOk()) st = recvAll(linkFd, &theirs, sizeof(theirs), deadline, "shm name exchange");
  if (st.isOk()) {
    theirs.name[sizeof(theirs.name) - 1] = '\0';
    if (std::strncmp(theirs.name, "/braid-", 7) != 0) {
      st = remoteError("the peer sent a malformed shared-memory name");
    } else {
      st = openFifo(theirs.name, o, out.get());
    }
  }
  char ack = st.isOk() ? kMapped : 0;
  if (st.isOk() && singleCopy && theirs.tokenAt != 0 && peer.pid > 0 &&
      canReadPeer(peer.pid, theirs.tokenAt, theirs.token.data(), theirs.token.size(),
                  "rank " + std::to_string(peer.rank))) {
    ack |= kReadsPeer;
  }
  char peerAck = 0;
  if (st.isOk()) st = sendAll(linkFd, &ack, 1, deadline, "shm mapping ack");
  if (st.isOk()) st = recvAll(linkFd, &peerAck, 1, deadline, "shm mapping ack");
  if (st.isOk() && (peerAck & kMapped) == 0) {
    st = remoteError("the peer could not map this rank's FIFO");
  }
  shm_unlink(mine.c_str());  // normally the peer has unlinked it already
  close(linkFd);
  if (!st.isOk()) return st;
  // Both directions or neither: each side then reads what the other posts.
  const bool both = (ack & kReadsPeer) != 0 && (peerAck & kReadsPeer) != 0;
  return std::unique_ptr<Endpoint>(
      new ShmEndpoint(o, std::move(in), std::move(out), static_cast<pid_t>(peer.pid), both));
}

}  // namespace

int sweepDeadSegments() {
  const std::string& ns = shmPidNamespace();
  if (ns.empty()) return 0;  // no way to tell our namespace's pids from another's
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  int removed = 0;
  std::string pids;
  while (dirent* e = readdir(dir)) {
    const char* name = e->d_name;
    if (std::strncmp(name, "braid-", 6) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name + 6, &end, 10);
    if (end == name + 6 || pid <= 0) continue;
    const std::string prefix = shmSegmentPrefix(pid);  // this namespace's, this form
    if (std::strncmp(name, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string path = std::string("/dev/shm/") + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || st.st_uid != geteuid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or unknown
    if (unlink(path.c_str()) == 0) {
      ++removed;
      if (pids.find(" " + std::to_string(pid) + ",") == std::string::npos) {
        pids += " " + std::to_string(pid) + ",";
      }
    }
  }
  closedir(dir);
  if (removed > 0) {
    pids.pop_back();
    BRAID_INFO(
        "shm: removed %d shared-memory segment(s) left in /dev/shm by process(es)%s, "
        "which no longer exist",
        removed, pids.c_str());
  }
  return removed;
}

std::unique_ptr<Transport> makeShmTransport() {
  static std::once_flag swept;
  std::call_once(swept, [] { (void)sweepDeadSegments(); });
  return std::make_unique<ShmTransport>();
}

}  // namespace braid::transport::shm
