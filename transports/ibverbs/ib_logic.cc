#include "transports/ibverbs/ib_logic.h"

#include "core/net.h"

namespace braid::transport::ibverbs {

bool hcaAllowed(const std::string& spec, const std::string& device, int port) {
  if (spec.empty() || spec == "^") return true;
  const bool exclude = spec[0] == '^';
  const std::string list = exclude ? spec.substr(1) : spec;
  // An entry without a port matches the bare name; one with a port, name:port.
  const bool hit = interfaceMatches(list, device) ||
                   interfaceMatches(list, device + ":" + std::to_string(port));
  return exclude ? !hit : hit;
}

std::vector<int> hcaOrder(const std::vector<std::string>& devices, const std::string& preferred,
                          const std::string& spec) {
  std::vector<int> order;
  const bool prefer = spec.empty() && !preferred.empty();
  for (int i = 0; i < static_cast<int>(devices.size()); ++i) {
    if (prefer && devices[i] == preferred) {
      order.insert(order.begin(), i);
    } else {
      order.push_back(i);
    }
  }
  return order;
}

namespace {

bool isZero(const uint8_t* g) {
  for (int i = 0; i < 16; ++i) {
    if (g[i] != 0) return false;
  }
  return true;
}

bool isV4Mapped(const uint8_t* g) {
  for (int i = 0; i < 10; ++i) {
    if (g[i] != 0) return false;
  }
  return g[10] == 0xff && g[11] == 0xff;
}

bool isLinkLocal(const uint8_t* g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

}  // namespace

int chooseGidIndex(const std::vector<GidInfo>& gids, bool ethernet, int forced) {
  if (forced >= 0) {
    for (const GidInfo& g : gids) {
      if (g.index == forced) return forced;
    }
    return -1;
  }
  if (!ethernet) return 0;
  // Best first: (type, address kind) in order of preference.
  const struct {
    GidType type;
    bool v4;
  } order[] = {{GidType::kRoceV2, true}, {GidType::kRoceV2, false},
               {GidType::kRoceV1, true}, {GidType::kRoceV1, false}};
  for (const auto& want : order) {
    for (const GidInfo& g : gids) {
      if (g.type != want.type || isZero(g.raw) || isLinkLocal(g.raw)) continue;
      if (isV4Mapped(g.raw) == want.v4) return g.index;
    }
  }
  return -1;
}

bool CtsFifo::ready(CtsEntry* out) const {
  volatile CtsEntry& e = entries_[indexFor(next_, n_)];
  if (e.seq != next_ + 1) return false;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);  // the fields before seq are complete
  out->addr = e.addr;
  out->rkey = e.rkey;
  out->bytes = e.bytes;
  out->seq = e.seq;
  return true;
}

MrCache::MrCache(Register reg, Deregister dereg, size_t capacity, size_t pageBytes)
    : reg_(std::move(reg)), dereg_(std::move(dereg)), capacity_(capacity), page_(pageBytes) {}

MrCache::~MrCache() {
  for (const Entry& e : entries_) dereg_(e.mr);
}

Expected<MrHandle> MrCache::get(const void* addr, size_t len) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t base = a / page_ * page_;
  const uintptr_t end = (a + (len ? len : 1) + page_ - 1) / page_ * page_;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->mr.base <= base && end <= it->mr.base + it->mr.len) {
      ++it->pins;
      ++hits_;
      entries_.splice(entries_.begin(), entries_, it);
      return it->mr;
    }
  }
  // Make room: drop the least recently used registrations nobody holds.
  for (auto it = entries_.end(); entries_.size() >= capacity_ && it != entries_.begin();) {
    --it;
    if (it->pins > 0) continue;
    dereg_(it->mr);
    it = entries_.erase(it);
  }
  BRAID_ASSIGN_OR_RETURN(MrHandle mr, reg_(base, end - base));
  ++registrations_;
  entries_.push_front(Entry{mr, 1});
  return mr;
}

void MrCache::release(const MrHandle& mr) {
  for (Entry& e : entries_) {
    if (e.mr.opaque == mr.opaque && e.mr.base == mr.base && e.pins > 0) {
      --e.pins;
      return;
    }
  }
}

}  // namespace braid::transport::ibverbs
