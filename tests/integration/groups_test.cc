// Groups, send/recv, barrier and split semantics over real processes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

int initWorld(braidComm_t* world, int* n, int* r) {
  if (braidCommInitFromEnv(world, nullptr) != braidSuccess) return 2;
  braidCommCount(*world, n);
  braidCommUserRank(*world, r);
  return 0;
}

void expectAllZero(const std::vector<RankOutcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

// All-to-all built from sends and receives in one group, 8 MiB per pair: far
// more than a FIFO holds, so it completes only if the group runs them together.
TEST(Groups, AllToAllFromSendRecvLargerThanTheFifos) {
  const int n = 4;
  for (const char* transport : {"shm", "socket"}) {
    Env env = jobEnv(n);
    env["BRAID_TRANSPORTS"] = transport;
    auto outcomes = runRanks(n, env, [](int) {
      braidComm_t w;
      int n = 0, r = 0;
      if (initWorld(&w, &n, &r)) return 2;
      const size_t k = 2 << 20;  // int32 elements per pair
      std::vector<int32_t> out(n * k), in(n * k, -1);
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < k; ++i) out[p * k + i] = r * 1000 + p + static_cast<int>(i % 7);
      }
      braidGroupStart();
      for (int p = 0; p < n; ++p) {
        braidSend(out.data() + p * k, k, braidInt32, p, w, nullptr);
        braidRecv(in.data() + p * k, k, braidInt32, p, w, nullptr);
      }
      if (braidGroupEnd() != braidSuccess) {
        fprintf(stderr, "group: %s\n", braidGetLastError(w));
        return 3;
      }
      int bad = 0;
      for (int p = 0; p < n; ++p) {
        for (size_t i = 0; i < k; ++i) bad += in[p * k + i] != p * 1000 + r + static_cast<int>(i % 7);
      }
      braidCommDestroy(w);
      return bad == 0 ? 0 : 1;
    });
    SCOPED_TRACE(transport);
    expectAllZero(outcomes);
  }
}

TEST(Groups, NestedGroupsRingExchangeAndCollectivesTogether) {
  const int n = 5;
  auto outcomes = runRanks(n, jobEnv(n), [](int) {
    braidComm_t w;
    int n = 0, r = 0;
    if (initWorld(&w, &n, &r)) return 2;
    std::vector<float> right(300000, static_cast<float>(r)), left(300000, -1);
    int32_t sum = r, bcast = r == 2 ? 77 : 0;
    braidGroupStart();
    braidGroupStart();  // nested: only the outermost end issues
    braidSend(right.data(), right.size(), braidFloat32, (r + 1) % n, w, nullptr);
    braidRecv(left.data(), left.size(), braidFloat32, (r + n - 1) % n, w, nullptr);
    braidGroupEnd();
    braidAllReduce(&sum, &sum, 1, braidInt32, braidSum, w, nullptr);
    braidBroadcast(&bcast, &bcast, 1, braidInt32, 2, w, nullptr);
    if (sum != r) return 4;  // nothing has run yet
    if (braidGroupEnd() != braidSuccess) return 3;
    int bad = sum != n * (n - 1) / 2 || bcast != 77;
    for (float x : left) bad += x != static_cast<float>((r + n - 1) % n);
    braidCommDestroy(w);
    return bad == 0 ? 0 : 1;
  });
  expectAllZero(outcomes);
}

TEST(Groups, SendToSelfAndMismatchedSizesAreReported) {
  const int n = 2;
  auto outcomes = runRanks(n, jobEnv(n), [](int) {
    braidComm_t w;
    int n = 0, r = 0;
    if (initWorld(&w, &n, &r)) return 2;
    int32_t a = 41 + r, b = 0;
    braidGroupStart();
    braidSend(&a, 1, braidInt32, r, w, nullptr);
    braidRecv(&b, 1, braidInt32, r, w, nullptr);
    if (braidGroupEnd() != braidSuccess || b != 41 + r) return 3;
    // Rank 0 sends 2 elements where rank 1 expects 1: an error, not a hang.
    int32_t two[2] = {1, 2};
    braidResult_t res = r == 0 ? braidSend(two, 2, braidInt32, 1, w, nullptr)
                               : braidRecv(two, 1, braidInt32, 0, w, nullptr);
    if (r == 1) {
      fprintf(stderr, "MISMATCH %d: %s\n", res, braidGetLastError(w));
      if (res != braidInvalidUsage) return 4;
    } else {
      // An abort is seen as a death, which fails rank 1's later calls: leave
      // only once rank 1 has certainly reached its receive.
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    }
    braidCommAbort(w);
    return 0;
  });
  expectAllZero(outcomes);
  EXPECT_NE(outcomes[1].output.find("sent 8 bytes where this rank expected 4"), std::string::npos)
      << outcomes[1].output;
}

// nccl-tests' in-place sendrecv: each rank sends its buffer to the next and receives into
// that same buffer from the previous, 8 MiB (more than the FIFOs hold, so receives arrive
// while sends still read), beside a swap of two buffers with itself; then the same on a
// host stream. Each send carries the data from before the group. A send to oneself alone
// is refused at once, on either stream, and the communicator works on.
TEST(Groups, SendsWhoseReceivesLandOnTheirBuffersCarryTheDataFromBefore) {
  for (int n : {1, 2, 3}) {
    auto outcomes = runRanks(n, jobEnv(n), [](int) {
      braidComm_t w;
      int n = 0, r = 0;
      if (initWorld(&w, &n, &r)) return 2;
      braidStream_t hs = nullptr;
      if (braidStreamCreate(&hs) != braidSuccess) return 2;
      const size_t k = 2 << 20;
      std::vector<int32_t> buf(3 * k);
      int bad = 0;
      for (braidStream_t stream : {static_cast<braidStream_t>(nullptr), hs}) {
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = r * 1000 + static_cast<int>(i % 997);
        int32_t* b = buf.data();
        braidGroupStart();
        braidSend(b, k, braidInt32, (r + 1) % n, w, stream);
        braidRecv(b, k, braidInt32, (r + n - 1) % n, w, stream);
        braidSend(b + k, k, braidInt32, r, w, stream);
        braidRecv(b + 2 * k, k, braidInt32, r, w, stream);
        braidSend(b + 2 * k, k, braidInt32, r, w, stream);
        braidRecv(b + k, k, braidInt32, r, w, stream);
        if (braidGroupEnd() != braidSuccess || braidStreamSynchronize(stream) != braidSuccess) {
          fprintf(stderr, "group: %s\n", braidGetLastError(w));
          return 3;
        }
        const int from = (r + n - 1) % n;
        for (size_t i = 0; i < 3 * k; ++i) {
          const size_t block = i / k, at = i % k;
          const size_t src = block == 0 ? at : (block == 1 ? 2 * k + at : k + at);
          bad += buf[i] != (block == 0 ? from : r) * 1000 + static_cast<int>(src % 997);
        }
        int32_t one = 5, got = -1;
        if (braidSend(&one, 1, braidInt32, r, w, stream) != braidInvalidUsage) return 4;
        if (std::string(braidGetLastError(w)).find("same group") == std::string::npos) return 5;
        if (braidRecv(&got, 1, braidInt32, r, w, stream) != braidInvalidUsage || got != -1) return 6;
        braidResult_t async = braidSuccess;
        if (braidCommGetAsyncError(w, &async) != braidSuccess || async != braidSuccess) return 7;
      }
      int32_t sum = 1;
      if (braidAllReduce(&sum, &sum, 1, braidInt32, braidSum, w, nullptr) != braidSuccess ||
          sum != n) {
        return 8;
      }
      braidStreamDestroy(hs);
      braidCommDestroy(w);
      return bad == 0 ? 0 : 1;
    });
    SCOPED_TRACE(n);
    expectAllZero(outcomes);
  }
}

// Consecutive groups that differ from the one before in one thing only (a receive
// buffer, a send buffer, the count, the datatype, the peers, the order of two sends to
// one peer, the kinds, a send to oneself, a receive onto a send buffer), each run twice
// with new data: every byte of every buffer is what the group's sends carried, or
// untouched. A group like the last reuses its plan and schedule (runtime/host_calls.cc),
// so a difference the reuse missed shows as a byte in the wrong place.
TEST(Groups, GroupsOneThingApartFromTheLastAreEachExact) {
  const int n = 3;
  auto outcomes = runRanks(n, jobEnv(n), [](int) {
    braidComm_t w;
    int n = 0, r = 0;
    if (initWorld(&w, &n, &r)) return 2;
    enum Peer { kRight, kLeft, kSelf };
    struct Op {
      bool send;
      int buf;
      size_t offset;  // bytes
      size_t count;
      braidDataType_t type;
      Peer peer;
    };
    using G = std::vector<Op>;
    const braidDataType_t i32 = braidInt32, u8 = braidUint8;
    const std::vector<G> groups = {
        {{true, 0, 0, 4, i32, kRight}, {false, 1, 0, 4, i32, kLeft}},
        {{true, 0, 0, 4, i32, kRight}, {false, 2, 0, 4, i32, kLeft}},    // receive buffer
        {{true, 0, 8, 4, i32, kRight}, {false, 2, 0, 4, i32, kLeft}},    // send buffer
        {{true, 0, 8, 8, i32, kRight}, {false, 2, 0, 8, i32, kLeft}},    // count
        {{true, 0, 8, 8, u8, kRight}, {false, 2, 0, 8, u8, kLeft}},      // datatype
        {{true, 0, 8, 8, u8, kLeft}, {false, 2, 0, 8, u8, kRight}},      // peers
        {{true, 0, 0, 4, u8, kRight}, {true, 1, 0, 4, u8, kRight},
         {false, 2, 0, 4, u8, kLeft}, {false, 3, 0, 4, u8, kLeft}},
        {{true, 1, 0, 4, u8, kRight}, {true, 0, 0, 4, u8, kRight},        // sends' order
         {false, 2, 0, 4, u8, kLeft}, {false, 3, 0, 4, u8, kLeft}},
        {{true, 0, 0, 4, u8, kRight}, {false, 1, 0, 4, u8, kLeft}},
        {{false, 0, 0, 4, u8, kRight}, {true, 1, 0, 4, u8, kLeft}},      // kinds
        {{true, 0, 0, 4, u8, kRight}, {false, 1, 0, 4, u8, kLeft},
         {true, 2, 0, 4, u8, kSelf}, {false, 3, 0, 4, u8, kSelf}},       // to oneself
        {{true, 0, 0, 4, u8, kRight}, {false, 0, 0, 4, u8, kLeft}},      // onto the send
        {{true, 0, 0, 4, u8, kRight}, {false, 1, 0, 4, u8, kLeft}},
    };
    constexpr int kBufs = 4;
    constexpr size_t kBytes = 64;
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    auto value = [](int rank, int round, int buf, size_t at) {
      return static_cast<uint8_t>(rank * 37 + round * 11 + buf * 5 + static_cast<int>(at));
    };
    auto size = [](braidDataType_t t) { return t == braidInt32 ? size_t{4} : size_t{1}; };
    std::vector<std::vector<uint8_t>> bufs(kBufs, std::vector<uint8_t>(kBytes));
    int round = 0, bad = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (int again = 0; again < 2; ++again, ++round) {
        for (int b = 0; b < kBufs; ++b) {
          for (size_t i = 0; i < kBytes; ++i) bufs[b][i] = value(r, round, b, i);
        }
        std::vector<std::vector<uint8_t>> want = bufs;
        // The k-th receive from a peer gets its k-th send here: from the left, its sends
        // to the right; from the right, its sends to the left; from oneself, one's own.
        auto sender = [&](Peer from) { return from == kLeft ? left : from == kRight ? right : r; };
        auto sendsTo = [](Peer from) {
          return from == kLeft ? kRight : from == kRight ? kLeft : kSelf;
        };
        for (Peer from : {kLeft, kRight, kSelf}) {
          std::vector<const Op*> recvs, sends;
          for (const Op& op : groups[g]) {
            if (!op.send && op.peer == from) recvs.push_back(&op);
            if (op.send && op.peer == sendsTo(from)) sends.push_back(&op);
          }
          for (size_t k = 0; k < recvs.size() && k < sends.size(); ++k) {
            for (size_t i = 0; i < recvs[k]->count * size(recvs[k]->type); ++i) {
              want[recvs[k]->buf][recvs[k]->offset + i] =
                  value(sender(from), round, sends[k]->buf, sends[k]->offset + i);
            }
          }
        }
        braidGroupStart();
        for (const Op& op : groups[g]) {
          const int peer = op.peer == kRight ? right : op.peer == kLeft ? left : r;
          uint8_t* at = bufs[op.buf].data() + op.offset;
          if (op.send) {
            braidSend(at, op.count, op.type, peer, w, nullptr);
          } else {
            braidRecv(at, op.count, op.type, peer, w, nullptr);
          }
        }
        if (braidGroupEnd() != braidSuccess) {
          fprintf(stderr, "group %zu: %s\n", g, braidGetLastError(w));
          return 3;
        }
        if (bufs != want) {
          fprintf(stderr, "group %zu, run %d: wrong bytes\n", g, again + 1);
          ++bad;
        }
      }
    }
    braidCommDestroy(w);
    return bad == 0 ? 0 : 1;
  });
  expectAllZero(outcomes);
}

// One thread driving every rank of a communicator (as ncclCommInitAll's caller does):
// one group of an all-reduce per rank on the NULL stream, each blocking until every rank
// has made it, then a group of an all-gather per rank, each on a host stream of its own.
// Both complete, exact; issued one after another, the first waited out the timeout and
// failed.
TEST(Groups, GroupAcrossRanksOfOneThread) {
  for (int n : {2, 3, 4}) {
    Env env;
    env["BRAID_TIMEOUT_MS"] = "15000";
    auto outcomes = runRanks(1, env, [n](int) {
      braidUniqueId id;
      if (braidGetUniqueId(&id) != braidSuccess) return 2;
      std::vector<braidComm_t> comms(n, nullptr);
      std::vector<std::thread> inits;
      for (int r = 0; r < n; ++r) {
        inits.emplace_back([&, r] { braidCommInitRank(&comms[r], n, id, r); });
      }
      for (std::thread& t : inits) t.join();
      for (braidComm_t c : comms) {
        if (c == nullptr) return 3;
      }
      const size_t k = 50000;
      std::vector<std::vector<int32_t>> in(n), out(n), all(n);
      for (int r = 0; r < n; ++r) {
        in[r].assign(k, r + 1);
        out[r].assign(k, 0);
        all[r].assign(k * n, 0);
      }
      const auto t0 = std::chrono::steady_clock::now();
      braidGroupStart();
      for (int r = 0; r < n; ++r) {
        braidAllReduce(in[r].data(), out[r].data(), k, braidInt32, braidSum, comms[r], nullptr);
      }
      const braidResult_t reduced = braidGroupEnd();
      std::vector<braidStream_t> streams(n, nullptr);
      for (braidStream_t& s : streams) braidStreamCreate(&s);
      braidGroupStart();
      for (int r = 0; r < n; ++r) {
        braidAllGather(out[r].data(), all[r].data(), k, braidInt32, comms[r], streams[r]);
      }
      braidResult_t gathered = braidGroupEnd();
      for (braidStream_t s : streams) {
        if (braidStreamSynchronize(s) != braidSuccess) gathered = braidInternalError;
      }
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      size_t wrong = 0;
      for (int r = 0; r < n; ++r) {
        for (int32_t v : all[r]) wrong += v != n * (n + 1) / 2 ? 1 : 0;
      }
      fprintf(stderr, "%d ranks: all-reduce group %d, all-gather group %d, %.2f s, %zu wrong\n", n,
              reduced, gathered, sec, wrong);
      for (braidStream_t s : streams) braidStreamDestroy(s);
      for (braidComm_t c : comms) braidCommDestroy(c);
      // Issued one after another, the first group fails with the timeout's error.
      return reduced == braidSuccess && gathered == braidSuccess && wrong == 0 ? 0 : 1;
    });
    expectAllZero(outcomes);
  }
}

TEST(Barrier, NoRankLeavesBeforeTheLastArrives) {
  const int n = 4;
  auto outcomes = runRanks(n, jobEnv(n), [](int) {
    braidComm_t w;
    int n = 0, r = 0;
    if (initWorld(&w, &n, &r)) return 2;
    braidBarrier(w, nullptr);
    auto t0 = std::chrono::steady_clock::now();
    if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
    if (braidBarrier(w, nullptr) != braidSuccess) return 3;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
    braidCommDestroy(w);
    return ms >= 380 ? 0 : 1;
  });
  expectAllZero(outcomes);
}

// A collective of count 0 returns at once on the rank that makes it: rank 0 alone makes
// one of every kind (plain, in a group, on a host stream), then every rank runs one
// all-reduce. Were any of them sent to the peers, rank 0's first would meet the others'
// all-reduce: a mismatch, a wrong sum or a timeout (BRAID_CHECK=1 has ranks compare each
// collective call before it runs, so even a call that moves nothing would be compared).
TEST(ZeroCount, CollectivesOfCountZeroWaitForNoPeer) {
  const int n = 3;
  Env env = jobEnv(n);
  env["BRAID_TIMEOUT_MS"] = "20000";
  env["BRAID_CHECK"] = "1";
  auto outcomes = runRanks(n, env, [](int) {
    braidComm_t w;
    int n = 0, r = 0;
    if (initWorld(&w, &n, &r)) return 2;
    float a[4] = {0, 0, 0, 0}, b[16] = {0};
    if (r == 0) {
      braidStream_t s;
      if (braidStreamCreate(&s) != braidSuccess) return 3;
      for (int round = 0; round < 3; ++round) {
        braidStream_t on = round == 2 ? s : nullptr;
        if (round == 1) braidGroupStart();
        braidResult_t res[] = {
            braidAllReduce(a, b, 0, braidFloat32, braidSum, w, on),
            braidAllGather(a, b, 0, braidFloat32, w, on),
            braidReduceScatter(b, a, 0, braidFloat32, braidSum, w, on),
            braidBroadcast(a, b, 0, braidFloat32, 1, w, on),
            braidReduce(a, b, 0, braidFloat32, braidSum, 2, w, on),
            braidGather(a, b, 0, braidFloat32, 1, w, on),
            braidScatter(b, a, 0, braidFloat32, 2, w, on),
            braidAlltoAll(b, b + 8, 0, braidFloat32, w, on),
        };
        if (round == 1 && braidGroupEnd() != braidSuccess) return 4;
        for (braidResult_t x : res) {
          if (x != braidSuccess) {
            fprintf(stderr, "count 0: %s\n", braidGetLastError(w));
            return 5;
          }
        }
      }
      if (braidStreamSynchronize(s) != braidSuccess || braidStreamDestroy(s) != braidSuccess) {
        return 6;
      }
    }
    float x = static_cast<float>(r + 1), sum = 0;
    if (braidAllReduce(&x, &sum, 1, braidFloat32, braidSum, w, nullptr) != braidSuccess) {
      fprintf(stderr, "all-reduce: %s\n", braidGetLastError(w));
      return 7;
    }
    braidCommDestroy(w);
    return sum == static_cast<float>(n * (n + 1) / 2) ? 0 : 1;
  });
  expectAllZero(outcomes);
}

TEST(Split, KeysOrderRanksAndNoColorGivesNull) {
  const int n = 6;
  auto outcomes = runRanks(n, jobEnv(n), [](int) {
    braidComm_t w, sub;
    int n = 0, r = 0;
    if (initWorld(&w, &n, &r)) return 2;
    int color = r == 5 ? BRAID_SPLIT_NOCOLOR : r % 2;
    if (braidCommSplit(w, color, -r, &sub, nullptr) != braidSuccess) return 3;
    if (r == 5) return sub == nullptr ? 0 : 4;
    int sn = 0, sr = 0;
    braidCommCount(sub, &sn);
    braidCommUserRank(sub, &sr);
    // color 0: ranks 0,2,4 -> keys 0,-2,-4 -> order 4,2,0; color 1: 1,3 -> 3,1.
    int wantSize = r % 2 == 0 ? 3 : 2;
    int wantRank = r % 2 == 0 ? (4 - r) / 2 : (3 - r) / 2;
    int32_t x = r;
    braidAllReduce(&x, &x, 1, braidInt32, braidSum, sub, nullptr);
    int wantSum = r % 2 == 0 ? 6 : 4;
    braidCommDestroy(sub);
    braidCommDestroy(w);
    return sn == wantSize && sr == wantRank && x == wantSum ? 0 : 1;
  });
  expectAllZero(outcomes);
}

}  // namespace
}  // namespace braid::test
