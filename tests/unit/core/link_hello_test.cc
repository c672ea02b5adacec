// The peer-link hello: what makeLinkHello builds for a rank parses there;
// strangers (short, wrong secret, wrong target, unknown kind or rank) are
// braidRemoteError, a rank of the job with other slice settings is
// braidInvalidUsage naming the variables to align.
#include <gtest/gtest.h>

#include <cstring>

#include "core/link_hello.h"

namespace braid {
namespace {

constexpr Secret kSecret = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
const LinkExpectation kRank2Of4{kSecret, 2, 4, 128 << 10, 8};

Expected<LinkOrigin> parse(const LinkHello& h) { return parseLinkHello(&h, sizeof(h), kRank2Of4); }

TEST(LinkHello, WhatARankOfTheJobSendsParses) {
  for (uint32_t kind : {kLinkControl, kLinkData, kLinkPass}) {
    Expected<LinkOrigin> o = parse(makeLinkHello(kind, kSecret, 3, 2, 128 << 10, 8));
    ASSERT_TRUE(o.isOk()) << o.status().message();
    EXPECT_EQ(o.value().kind, kind);
    EXPECT_EQ(o.value().from, 3);
  }
}

TEST(LinkHello, StrangersAreRemoteErrors) {
  Secret other = kSecret;
  other[15] ^= 1;
  const LinkHello good = makeLinkHello(kLinkData, kSecret, 0, 2, 128 << 10, 8);
  LinkHello badMagic = good;
  badMagic.magic ^= 1;
  LinkHello badKind = good;
  badKind.kind = 7;
  const LinkHello cases[] = {
      makeLinkHello(kLinkData, other, 0, 2, 128 << 10, 8),  // another job's secret
      makeLinkHello(kLinkData, kSecret, 0, 1, 128 << 10, 8),  // meant for rank 1
      makeLinkHello(kLinkData, kSecret, 4, 2, 128 << 10, 8),  // no rank 4 in 4 ranks
      makeLinkHello(kLinkData, kSecret, -1, 2, 128 << 10, 8),
      makeLinkHello(kLinkData, kSecret, 2, 2, 128 << 10, 8),  // from itself
      badMagic, badKind};
  for (const LinkHello& h : cases) {
    Expected<LinkOrigin> o = parse(h);
    ASSERT_FALSE(o.isOk());
    EXPECT_EQ(o.status().code(), braidRemoteError) << o.status().message();
  }
  Expected<LinkOrigin> shortHello = parseLinkHello(&good, sizeof(good) - 1, kRank2Of4);
  ASSERT_FALSE(shortHello.isOk());
  EXPECT_EQ(shortHello.status().code(), braidRemoteError);
  EXPECT_FALSE(parseLinkHello(nullptr, sizeof(good), kRank2Of4).isOk());
}

TEST(LinkHello, OtherSliceSettingsAreAUsageErrorNamingTheVariables) {
  for (const LinkHello& h : {makeLinkHello(kLinkData, kSecret, 1, 2, 64 << 10, 8),
                             makeLinkHello(kLinkData, kSecret, 1, 2, 128 << 10, 4)}) {
    Expected<LinkOrigin> o = parse(h);
    ASSERT_FALSE(o.isOk());
    EXPECT_EQ(o.status().code(), braidInvalidUsage);
    EXPECT_NE(o.status().message().find("rank 1 uses slice size"), std::string::npos);
    EXPECT_NE(o.status().message().find("BRAID_SHM_SLOT_BYTES / BRAID_SHM_SLOTS"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace braid
