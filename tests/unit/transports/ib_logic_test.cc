// The ibverbs transport's device-free logic: BRAID_IB_HCA's grammar, GID
// choice on RoCE and InfiniBand, the clear-to-send FIFO, the MR cache.
#include "transports/ibverbs/ib_logic.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

namespace braid::transport::ibverbs {
namespace {

// The NIC nearest the rank's GPU (topo::nearestNic) is tried first unless
// BRAID_IB_HCA is set, which alone decides which devices may be used.
TEST(HcaOrder, NearestNicFirstUnlessBraidIbHcaIsSet) {
  const std::vector<std::string> devices = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
  EXPECT_EQ(hcaOrder(devices, "mlx5_2", ""), (std::vector<int>{2, 0, 1, 3}));
  EXPECT_EQ(hcaOrder(devices, "", ""), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(hcaOrder(devices, "eth0", ""), (std::vector<int>{0, 1, 2, 3}));  // not a verbs device
  EXPECT_EQ(hcaOrder(devices, "mlx5_2", "mlx5_0"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(hcaOrder({}, "mlx5_0", "").empty());
}

TEST(HcaSpec, PrefixesPortsExclusionAndExactNames) {
  const struct {
    const char* spec;
    const char* device;
    int port;
    bool allowed;
  } cases[] = {
      {"", "mlx5_7", 2, true},
      {"mlx5_1,mlx4", "mlx5_1", 1, true},
      {"mlx5_1,mlx4", "mlx5_10", 1, true},  // a prefix, as in NCCL
      {"mlx5_1,mlx4", "mlx4_0", 2, true},
      {"mlx5_1,mlx4", "mlx5_0", 1, false},
      {"=mlx5_1", "mlx5_1", 1, true},
      {"=mlx5_1", "mlx5_10", 1, false},
      {"mlx5_0:2", "mlx5_0", 2, true},
      {"mlx5_0:2", "mlx5_0", 1, false},
      {"^mlx5_3", "mlx5_3", 1, false},
      {"^mlx5_3", "mlx5_2", 1, true},
      {"^=mlx5_1:1", "mlx5_1", 1, false},
      {"^=mlx5_1:1", "mlx5_1", 2, true},
      {"^=mlx5_1:1", "mlx5_11", 1, true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(hcaAllowed(c.spec, c.device, c.port), c.allowed)
        << "'" << c.spec << "' on " << c.device << ":" << c.port;
  }
}

GidInfo gid(int index, GidType type, std::vector<uint8_t> bytes) {
  GidInfo g;
  g.index = index;
  g.type = type;
  std::memcpy(g.raw, bytes.data(), bytes.size());
  return g;
}

const std::vector<uint8_t> kLinkLocal = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7};
const std::vector<uint8_t> kV4 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
const std::vector<uint8_t> kGlobal6 = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

TEST(GidChoice, RoceV2WithIpv4FirstThenGlobalIpv6ThenV1) {
  // A typical RoCE port: v1 and v2 GIDs for the link-local and the IPv4 address.
  std::vector<GidInfo> port = {gid(0, GidType::kRoceV1, kLinkLocal),
                               gid(1, GidType::kRoceV2, kLinkLocal),
                               gid(2, GidType::kRoceV1, kV4), gid(3, GidType::kRoceV2, kV4),
                               gid(4, GidType::kRoceV2, kGlobal6)};
  EXPECT_EQ(chooseGidIndex(port, true, -1), 3);
  port.erase(port.begin() + 3);
  EXPECT_EQ(chooseGidIndex(port, true, -1), 4);  // v2, global IPv6
  port.pop_back();
  EXPECT_EQ(chooseGidIndex(port, true, -1), 2);  // only v1 left with an address
  port.pop_back();
  EXPECT_EQ(chooseGidIndex(port, true, -1), -1);  // link-local only: nothing routable
}

TEST(GidChoice, ForcedIndexAndInfiniBand) {
  std::vector<GidInfo> port = {gid(0, GidType::kRoceV1, kLinkLocal), gid(3, GidType::kRoceV2, kV4)};
  EXPECT_EQ(chooseGidIndex(port, true, 0), 0);   // BRAID_IB_GID_INDEX wins
  EXPECT_EQ(chooseGidIndex(port, true, 7), -1);  // not in the table
  EXPECT_EQ(chooseGidIndex({gid(0, GidType::kIb, kLinkLocal)}, false, -1), 0);
}

TEST(CtsFifo, FramesBecomeReadyOnlyInOrderOnceTheirEntryIsWritten) {
  constexpr int n = 4;
  CtsEntry mem[n] = {};
  CtsFifo fifo(mem, n);
  CtsEntry e{};
  EXPECT_FALSE(fifo.ready(&e));  // zeroed memory is never an entry
  // The receiver posts frames 0 and 1 (and, early, frame 2's slot).
  for (uint64_t f = 0; f < 3; ++f) {
    mem[CtsFifo::indexFor(f, n)] = CtsFifo::entryFor(f, 0x1000 + f * 64, 77, 64);
  }
  for (uint64_t f = 0; f < 3; ++f) {
    ASSERT_TRUE(fifo.ready(&e)) << f;
    EXPECT_EQ(e.addr, 0x1000 + f * 64);
    EXPECT_EQ(e.rkey, 77u);
    fifo.consume();
  }
  EXPECT_FALSE(fifo.ready(&e));
  // Frame 4 lands where frame 0 was: it must not pass for frame 3.
  mem[CtsFifo::indexFor(4, n)] = CtsFifo::entryFor(4, 0x9000, 77, 64);
  EXPECT_EQ(CtsFifo::indexFor(4, n), CtsFifo::indexFor(0, n));
  EXPECT_FALSE(fifo.ready(&e));
  mem[CtsFifo::indexFor(3, n)] = CtsFifo::entryFor(3, 0x8000, 77, 64);
  ASSERT_TRUE(fifo.ready(&e));
  EXPECT_EQ(e.addr, 0x8000u);
  fifo.consume();
  ASSERT_TRUE(fifo.ready(&e));
  EXPECT_EQ(e.addr, 0x9000u);
  EXPECT_EQ(fifo.nextFrame(), 4u);
}

// A fake verbs registry: counts registrations and which are still live.
struct FakeRegistry {
  std::map<void*, MrHandle> live;
  int next = 1;
  MrCache make(size_t capacity) {
    return MrCache(
        [this](uintptr_t base, size_t len) -> Expected<MrHandle> {
          MrHandle mr{base, len, static_cast<uint32_t>(next), static_cast<uint32_t>(next + 1000),
                      reinterpret_cast<void*>(static_cast<uintptr_t>(next))};
          ++next;
          live[mr.opaque] = mr;
          return mr;
        },
        [this](const MrHandle& mr) { live.erase(mr.opaque); }, capacity, 4096);
  }
};

TEST(MrCache, ReusesCoveringRegistrationsAndAlignsToPages) {
  FakeRegistry fake;
  {
    MrCache cache = fake.make(4);
    alignas(4096) static char buf[4 * 4096];
    auto a = cache.get(buf + 100, 5000);  // spans pages 0 and 1
    ASSERT_TRUE(a.isOk());
    EXPECT_EQ(a.value().base, reinterpret_cast<uintptr_t>(buf));
    EXPECT_EQ(a.value().len, 2u * 4096);
    auto b = cache.get(buf + 4096, 10);  // inside page 1: the same registration
    ASSERT_TRUE(b.isOk());
    EXPECT_EQ(b.value().opaque, a.value().opaque);
    EXPECT_EQ(cache.hits(), 1u);
    auto c = cache.get(buf + 3 * 4096, 10);  // page 3: a new one
    ASSERT_TRUE(c.isOk());
    EXPECT_NE(c.value().opaque, a.value().opaque);
    EXPECT_EQ(cache.registrations(), 2u);
    EXPECT_EQ(fake.live.size(), 2u);
  }
  EXPECT_TRUE(fake.live.empty()) << "the cache deregisters everything it holds";
}

TEST(MrCache, EvictsTheLeastRecentlyUsedUnpinnedEntry) {
  FakeRegistry fake;
  MrCache cache = fake.make(2);
  alignas(4096) static char buf[8 * 4096];
  MrHandle p0 = cache.get(buf, 1).value();
  MrHandle p2 = cache.get(buf + 2 * 4096, 1).value();
  cache.release(p2);
  cache.release(p0);
  ASSERT_TRUE(cache.get(buf, 1).isOk());  // p0 is now the most recent
  cache.release(p0);
  MrHandle p4 = cache.get(buf + 4 * 4096, 1).value();  // evicts p2, not p0
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(fake.live.count(p2.opaque), 0u);
  EXPECT_EQ(fake.live.count(p0.opaque), 1u);
  // Both remaining are pinned now: a third registration may not evict them.
  ASSERT_TRUE(cache.get(buf, 1).isOk());
  MrHandle p6 = cache.get(buf + 6 * 4096, 1).value();
  EXPECT_EQ(fake.live.count(p0.opaque), 1u);
  EXPECT_EQ(fake.live.count(p4.opaque), 1u);
  EXPECT_EQ(fake.live.count(p6.opaque), 1u);
}

}  // namespace
}  // namespace braid::transport::ibverbs
