// The socket transport's wire formats: frame headers announce at most a
// slice; stream counts, offers and joins are in range and checked whole; a
// join without the token is turned away.
#include <gtest/gtest.h>

#include <cstring>

#include "transports/socket/socket_wire.h"

namespace braid::transport::socket {
namespace {

const uint8_t kToken[kTokenBytes] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

TEST(SocketWire, FrameHeaderAnnouncesAtMostASlice) {
  FrameHeader h{kFrameMagic, 4096};
  Expected<uint32_t> n = parseFrameHeader(&h, sizeof(h), 4096);
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(n.value(), 4096u);
  EXPECT_EQ(parseFrameHeader(&h, sizeof(h), 4095).status().code(), braidRemoteError);
  EXPECT_NE(parseFrameHeader(&h, sizeof(h), 4095).status().message().find("more than the slice"),
            std::string::npos);
  h.magic = 0;
  EXPECT_FALSE(parseFrameHeader(&h, sizeof(h), 4096).isOk());
  h = {kFrameMagic, 0};
  EXPECT_TRUE(parseFrameHeader(&h, sizeof(h), 0).isOk());
  EXPECT_FALSE(parseFrameHeader(&h, sizeof(h) - 1, 4096).isOk());
}

TEST(SocketWire, StreamCountIsOneToTheMaximum) {
  for (uint32_t n : {0u, 1u, 16u, 17u, ~0u}) {
    StreamHello h{kStreamMagic, n};
    Expected<int> got = parseStreamHello(&h, sizeof(h));
    EXPECT_EQ(got.isOk(), n >= 1 && n <= static_cast<uint32_t>(kMaxStreams)) << n;
    if (got.isOk()) {
      EXPECT_EQ(got.value(), static_cast<int>(n));
    }
  }
  StreamHello bad{kJoinMagic, 2};
  EXPECT_FALSE(parseStreamHello(&bad, sizeof(bad)).isOk());
}

TEST(SocketWire, OfferCarriesAPortAndTheToken) {
  StreamOffer o{kStreamMagic, 40000, {}};
  std::memcpy(o.token, kToken, kTokenBytes);
  uint8_t token[kTokenBytes] = {};
  Expected<int> port = parseStreamOffer(&o, sizeof(o), token);
  ASSERT_TRUE(port.isOk());
  EXPECT_EQ(port.value(), 40000);
  EXPECT_EQ(std::memcmp(token, kToken, kTokenBytes), 0);
  for (uint32_t bad : {0u, 65536u}) {
    o.port = bad;
    EXPECT_FALSE(parseStreamOffer(&o, sizeof(o), token).isOk()) << bad;
  }
}

TEST(SocketWire, JoinNeedsTheTokenAndAnIndexInRange) {
  StreamJoin j{kJoinMagic, 2, {}};
  std::memcpy(j.token, kToken, kTokenBytes);
  Expected<int> index = parseStreamJoin(&j, sizeof(j), kToken, 3);
  ASSERT_TRUE(index.isOk());
  EXPECT_EQ(index.value(), 2);
  EXPECT_FALSE(parseStreamJoin(&j, sizeof(j), kToken, 2).isOk());  // streams 0, 1 only
  j.index = 0;  // the link itself is never joined
  EXPECT_FALSE(parseStreamJoin(&j, sizeof(j), kToken, 3).isOk());
  j.index = 1;
  j.token[0] ^= 1;
  Expected<int> stranger = parseStreamJoin(&j, sizeof(j), kToken, 3);
  ASSERT_FALSE(stranger.isOk());
  EXPECT_NE(stranger.status().message().find("did not present the token"), std::string::npos);
}

}  // namespace
}  // namespace braid::transport::socket
