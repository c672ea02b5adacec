// The socket transport over loopback TCP inside one process: frames striped
// over several streams come out whole and in order, both sides agree on the
// stream count, a connection without the token is turned away, and a closed
// peer is an error only after its frames were read.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <future>
#include <vector>

#include "core/net.h"
#include "transports/socket/socket_streams.h"
#include "transports/socket/socket_transport.h"

namespace braid::transport::socket {
namespace {

// A connected pair of blocking TCP sockets on 127.0.0.1.
std::pair<int, int> tcpPair() {
  SockAddr any = parseHostPort("127.0.0.1:0", true).value();
  SockAddr bound;
  int lfd = listenOn(any, &bound).value();
  Deadline d(5000);
  int a = connectTo(bound, d).value();
  int b = acceptBefore(lfd, d).value();
  close(lfd);
  return {a, b};
}

PeerInfo info(int rank, const char* host) {
  PeerInfo p;
  p.rank = rank;
  p.hostId = host;
  p.listenAddr = parseHostPort("127.0.0.1:1").value();
  return p;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

struct Pair {
  std::unique_ptr<Endpoint> a, b;
};

Pair connectPair(const ConnectOptions& o) {
  auto [fa, fb] = tcpPair();
  auto ta = makeSocketTransport(), tb = makeSocketTransport();
  PeerInfo r0 = info(0, "hostA"), r1 = info(1, "hostB");
  auto fut = std::async(std::launch::async, [&, fb = fb] {
    return tb->connect(fb, r1, r0, o, Deadline(5000));
  });
  auto ea = ta->connect(fa, r0, r1, o, Deadline(5000));
  auto eb = fut.get();
  EXPECT_TRUE(ea.isOk()) << ea.status().message();
  EXPECT_TRUE(eb.isOk()) << eb.status().message();
  if (!ea.isOk() || !eb.isOk()) return {};
  return {std::move(ea).value(), std::move(eb).value()};
}

// Frame k holds (k * 7 + i) & 0xff at byte i, and k * 97 % (slice + 1) bytes.
size_t frameBytes(int k, size_t slice) { return static_cast<size_t>(k) * 97 % (slice + 1); }

// Sends `frames` frames each way at once and checks what each side receives.
void exchange(Endpoint& a, Endpoint& b, int frames, size_t slice) {
  Endpoint* eps[2] = {&a, &b};
  int sent[2] = {0, 0}, got[2] = {0, 0};
  for (int spins = 0; (got[0] < frames || got[1] < frames) && spins < 10000000; ++spins) {
    for (int e = 0; e < 2; ++e) {
      ASSERT_TRUE(eps[e]->progress().isOk());
      if (sent[e] < frames) {
        if (char* out = static_cast<char*>(eps[e]->sendSlot())) {
          size_t n = frameBytes(sent[e], slice);
          for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>(sent[e] * 7 + i);
          ASSERT_TRUE(eps[e]->sendPost(n).isOk());
          ++sent[e];
        }
      }
      size_t n = 0;
      if (const char* in = static_cast<const char*>(eps[e]->recvSlot(&n))) {
        ASSERT_EQ(n, frameBytes(got[e], slice)) << "frame " << got[e] << " out of order";
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(static_cast<uint8_t>(in[i]), static_cast<uint8_t>(got[e] * 7 + i))
              << "frame " << got[e] << " byte " << i;
        }
        eps[e]->recvRelease();
        ++got[e];
      }
    }
  }
  EXPECT_EQ(got[0], frames);
  EXPECT_EQ(got[1], frames);
}

TEST(SocketTransport, StripedFramesArriveWholeAndInOrder) {
  ScopedEnv n("BRAID_SOCKET_NSOCKS", "3");
  const ConnectOptions o{64 << 10, 4};
  Pair p = connectPair(o);
  ASSERT_TRUE(p.a && p.b);
  EXPECT_NE(p.a->pollFd(), -1);
  exchange(*p.a, *p.b, 200, o.sliceBytes);
}

TEST(SocketTransport, OneStreamStillWorks) {
  ScopedEnv n("BRAID_SOCKET_NSOCKS", "1");
  const ConnectOptions o{4096, 2};
  Pair p = connectPair(o);
  ASSERT_TRUE(p.a && p.b);
  exchange(*p.a, *p.b, 50, o.sliceBytes);
}

TEST(SocketTransport, ClosedPeerIsAnErrorOnlyAfterItsFramesAreRead) {
  ScopedEnv n("BRAID_SOCKET_NSOCKS", "2");
  Pair p = connectPair({1024, 4});
  ASSERT_TRUE(p.a && p.b);
  for (int k = 0; k < 3; ++k) {
    std::memset(p.b->sendSlot(), k, 10);
    ASSERT_TRUE(p.b->sendPost(10).isOk());
  }
  while (p.b->sendPending()) ASSERT_TRUE(p.b->progress().isOk());
  p.b.reset();
  for (int k = 0; k < 3;) {
    size_t bytes = 0;
    const char* in = static_cast<const char*>(p.a->recvSlot(&bytes));
    if (in == nullptr) {
      ASSERT_TRUE(p.a->progress().isOk()) << "error before frame " << k << " was read";
      continue;
    }
    EXPECT_EQ(bytes, 10u);
    EXPECT_EQ(in[9], k);
    p.a->recvRelease();
    ++k;
  }
  Status st;
  for (int i = 0; i < 100000 && st.isOk(); ++i) st = p.a->progress();
  EXPECT_EQ(st.code(), braidRemoteError);
  EXPECT_NE(st.message().find("closed by the peer"), std::string::npos) << st.message();
}

TEST(SocketStreams, BothSidesUseTheSmallerCountAndPairStreamsByIndex) {
  auto [fa, fb] = tcpPair();
  auto fut = std::async(std::launch::async, [fb = fb] {
    return openStreams(fb, false, 2, Deadline(5000), "rank 0");
  });
  auto a = openStreams(fa, true, 3, Deadline(5000), "rank 1");
  auto b = fut.get();
  ASSERT_TRUE(a.isOk()) << a.status().message();
  ASSERT_TRUE(b.isOk()) << b.status().message();
  ASSERT_EQ(a.value().size(), 2u);
  ASSERT_EQ(b.value().size(), 2u);
  for (int i = 0; i < 2; ++i) {
    char c = static_cast<char>('x' + i), r = 0;
    ASSERT_EQ(write(a.value()[i], &c, 1), 1);
    ASSERT_EQ(read(b.value()[i], &r, 1), 1);
    EXPECT_EQ(r, c) << "stream " << i;
  }
  for (int fd : a.value()) close(fd);
  for (int fd : b.value()) close(fd);
}

TEST(SocketStreams, AConnectionWithoutTheTokenIsTurnedAway) {
  auto [fa, fb] = tcpPair();
  auto fut = std::async(std::launch::async, [fa = fa] {
    return openStreams(fa, true, 2, Deadline(5000), "rank 1");
  });
  // Play the peer by hand: its count, then a stranger, then the real stream.
  uint32_t hello[2] = {0x42525354, 2};
  ASSERT_EQ(write(fb, hello, sizeof(hello)), static_cast<ssize_t>(sizeof(hello)));
  uint32_t theirs[2];
  ASSERT_TRUE(recvAll(fb, theirs, sizeof(theirs), Deadline(5000), "count").isOk());
  struct {
    uint32_t magic, port;
    uint8_t token[16];
  } offer;
  ASSERT_TRUE(recvAll(fb, &offer, sizeof(offer), Deadline(5000), "offer").isOk());
  SockAddr to = parseHostPort("127.0.0.1:" + std::to_string(offer.port)).value();
  struct {
    uint32_t magic, index;
    uint8_t token[16];
  } join{0x42524a4e, 1, {}};
  int stranger = connectTo(to, Deadline(5000)).value();
  ASSERT_EQ(write(stranger, &join, sizeof(join)), static_cast<ssize_t>(sizeof(join)));
  char c;
  EXPECT_EQ(read(stranger, &c, 1), 0) << "a wrong token must close the connection";
  std::memcpy(join.token, offer.token, sizeof(join.token));
  int real = connectTo(to, Deadline(5000)).value();
  ASSERT_EQ(write(real, &join, sizeof(join)), static_cast<ssize_t>(sizeof(join)));
  auto a = fut.get();
  ASSERT_TRUE(a.isOk()) << a.status().message();
  ASSERT_EQ(a.value().size(), 2u);
  ASSERT_EQ(write(a.value()[1], "k", 1), 1);
  ASSERT_EQ(read(real, &c, 1), 1);
  EXPECT_EQ(c, 'k');
  for (int fd : a.value()) close(fd);
  close(stranger);
  close(real);
  close(fb);
}

TEST(SocketStreams, CountFollowsTheEnvironmentAndTheNode) {
  PeerInfo self = info(0, "hostA"), remote = info(1, "hostB"), local = info(2, "hostA");
  ScopedEnv braid("BRAID_SOCKET_NSOCKS", nullptr);
  ScopedEnv perThread("NCCL_NSOCKS_PERTHREAD", nullptr);
  ScopedEnv threads("NCCL_SOCKET_NTHREADS", nullptr);
  EXPECT_EQ(wantedStreams(self, remote), 2);
  EXPECT_EQ(wantedStreams(self, local), 1);
  setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
  setenv("NCCL_SOCKET_NTHREADS", "3", 1);
  EXPECT_EQ(wantedStreams(self, local), 6);
  setenv("BRAID_SOCKET_NSOCKS", "4", 1);  // Braid's own name wins, taken as is
  EXPECT_EQ(wantedStreams(self, remote), 4);
  setenv("BRAID_SOCKET_NSOCKS", "100", 1);
  EXPECT_EQ(wantedStreams(self, remote), kMaxStreams);
}

}  // namespace
}  // namespace braid::transport::socket
