// Shared windows with buffers from braidMemAlloc or registered heap buffers
// (exec/host/shared_windows.h): peers read them in place. Each rank overwrites its input as soon as
// a call returns, so a rank returning before its peers finished reading would corrupt their
// results. Ranks mix shared and private buffers, and calls run in many rounds:
// all-reduce, all-gather, all-to-all, reduce-scatter and broadcast.
// StreamedCopies: private buffers through the default windows and the FIFOs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

float valueOf(int rank, size_t i, int iteration) {
  return static_cast<float>((rank + 1) * 3 + static_cast<int>(i % 11) + iteration);
}

// Buffers from braidMemAlloc (or, with `registered`, from the heap and
// registered with braidCommRegister, which shares the pages under them) on even
// ranks (or on all, with `allShared`), from the heap on the others.
struct Buffer {
  float* p = nullptr;
  bool memAlloc = false;
  braidComm_t comm = nullptr;
  void* registration = nullptr;
  Buffer(size_t n, bool shared, bool registered, braidComm_t world) {
    if (shared && !registered) {
      void* v = nullptr;
      if (braidMemAlloc(&v, n * sizeof(float)) == braidSuccess) p = static_cast<float*>(v);
      memAlloc = true;
      return;
    }
    // Registration shares whole pages only (a buffer starting and ending on
    // page boundaries): the heap's other buffers stay unregistered.
    const size_t bytes = (n * sizeof(float) + 4095) / 4096 * 4096;
    void* v = nullptr;
    if (posix_memalign(&v, 4096, bytes) == 0) p = static_cast<float*>(v);
    if (shared && p != nullptr &&
        braidCommRegister(world, p, bytes, &registration) == braidSuccess) {
      comm = world;
    }
  }
  // A registration left alone ends with its communicator (braidCommDestroy).
  ~Buffer() {
    if (memAlloc) {
      braidMemFree(p);
    } else {
      std::free(p);
    }
  }
};

// Whether the page under `p` is a mapping of a region in /dev/shm (a
// registered buffer that peers can map), by /proc/self/maps.
bool onSharedPages(const void* p) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  char line[512];
  bool found = false;
  const auto at = reinterpret_cast<uintptr_t>(p);
  while (!found && fgets(line, sizeof(line), f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= at && at < hi) {
      found = strstr(line, "/dev/shm/braid-") != nullptr;
    }
  }
  fclose(f);
  return found;
}

int body(int rank, bool allShared, bool registered) {
  braidComm_t world = nullptr;
  if (braidCommInitFromEnv(&world, nullptr) != braidSuccess) return 2;
  int n = 0;
  braidCommCount(world, &n);
  const bool shared = allShared || rank % 2 == 0;
  const size_t k = 70001;  // 280 KB per rank: many rounds of the test's 4 KiB windows
  Buffer in(k * n, shared, registered, world), out(k * n, shared, registered, world);
  // Premul-sums of 4 MiB and more (exec/host/shared_windows.cc kScaleInWindowMinBytes): all-reduce
  // two-shot at kBig, one-shot at kBig2 (BRAID_ALGO below).
  const size_t kBig = (4 << 20) / sizeof(float) + 13, kBig2 = (6 << 20) / sizeof(float) + 13;
  struct {
    Buffer in, out;
  } big{Buffer(kBig2 + 8 * n, shared, registered, world),
        Buffer(kBig2 + 8 * n, shared, registered, world)};
  if (in.p == nullptr || out.p == nullptr || big.in.p == nullptr || big.out.p == nullptr) return 3;
  if (shared && registered && !(onSharedPages(in.p) && onSharedPages(out.p + k * n - 1))) {
    fprintf(stderr, "registered buffers are not on shared pages\n");
    return 9;
  }
  int wrong = 0;
  for (int it = 0; it < 6; ++it) {
    // All-reduce, one-shot then two-shot (BRAID_ALGO below picks by size); 6 KB
    // is read in place too where every rank has a core (2 ranks on this VM).
    for (size_t count : {k, k / 2 + 3, size_t{1500}}) {
      for (size_t i = 0; i < count; ++i) in.p[i] = valueOf(rank, i, it);
      if (braidAllReduce(in.p, out.p, count, braidFloat32, braidSum, world, nullptr) != 0) {
        fprintf(stderr, "allreduce: %s\n", braidGetLastError(world));
        return 4;
      }
      std::memset(in.p, 0xff, count * sizeof(float));  // at once: peers must be done
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += valueOf(r, i, it);
        wrong += out.p[i] != want;
      }
    }
    // All-gather, out of place and in place.
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      float* send = inPlace ? out.p + rank * k : in.p;
      for (size_t i = 0; i < k; ++i) send[i] = valueOf(rank, i, it);
      if (braidAllGather(send, out.p, k, braidFloat32, world, nullptr) != 0) return 5;
      std::memset(send, 0xff, k * sizeof(float));
      for (int r = 0; r < n; ++r) {
        if (r == rank && inPlace) continue;
        for (size_t i = 0; i < k; ++i) wrong += out.p[r * k + i] != valueOf(r, i, it);
      }
    }
    // All-to-all and reduce-scatter, out of place: a lent input is read where
    // it lies (exec/host/shared_windows.cc blockOf), so it is overwritten at once too.
    for (size_t i = 0; i < k * n; ++i) in.p[i] = valueOf(rank, i, it);
    if (braidAlltoAll(in.p, out.p, k, braidFloat32, world, nullptr) != 0) return 7;
    std::memset(in.p, 0xff, k * n * sizeof(float));
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < k; ++i) wrong += out.p[r * k + i] != valueOf(r, rank * k + i, it);
    }
    for (size_t i = 0; i < k * n; ++i) in.p[i] = valueOf(rank, i, it);
    if (braidReduceScatter(in.p, out.p, k, braidFloat32, braidSum, world, nullptr) != 0) {
      return 8;
    }
    std::memset(in.p, 0xff, k * n * sizeof(float));
    for (size_t i = 0; i < k; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += valueOf(r, rank * k + i, it);
      wrong += out.p[i] != want;
    }
    // A premul-sum (each rank's input times rank + 2, summed): from 4 MiB up the input is
    // scaled on its way into the window, below into a copy first; a lent input is never
    // read in place, unscaled.
    braidRedOp_t premul = braidSum;
    float factor = static_cast<float>(rank + 2);
    if (braidRedOpCreatePreMulSum(&premul, &factor, braidFloat32, braidScalarHostImmediate,
                                  world) != braidSuccess) {
      return 12;
    }
    for (size_t count : {k, kBig, kBig2}) {
      const size_t block = count / n + 5;  // reduce-scatter: n blocks, 4 MiB and up in all
      for (size_t i = 0; i < count; ++i) big.in.p[i] = valueOf(rank, i, it);
      if (braidAllReduce(big.in.p, big.out.p, count, braidFloat32, premul, world, nullptr) != 0) {
        return 12;
      }
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += static_cast<float>(r + 2) * valueOf(r, i, it);
        wrong += big.out.p[i] != want;
      }
      for (size_t i = 0; i < block * n; ++i) big.in.p[i] = valueOf(rank, i, it);
      if (braidReduceScatter(big.in.p, big.out.p, block, braidFloat32, premul, world, nullptr) !=
          0) {
        return 12;
      }
      std::memset(big.in.p, 0xff, block * n * sizeof(float));  // at once: peers must be done
      for (size_t i = 0; i < block; ++i) {
        float want = 0;
        for (int r = 0; r < n; ++r) {
          want += static_cast<float>(r + 2) * valueOf(r, rank * block + i, it);
        }
        wrong += big.out.p[i] != want;
      }
    }
    if (braidRedOpDestroy(premul, world) != braidSuccess) return 12;
    // Broadcast from every root.
    for (int root = 0; root < n; ++root) {
      for (size_t i = 0; i < k; ++i) in.p[i] = valueOf(rank, i, it);
      if (braidBroadcast(in.p, out.p, k, braidFloat32, root, world, nullptr) != 0) return 6;
      std::memset(in.p, 0xff, k * sizeof(float));
      for (size_t i = 0; i < k; ++i) wrong += out.p[i] != valueOf(root, i, it);
    }
  }
  if (in.registration != nullptr) {
    // Deregistered, and the rest with the communicator: private pages again, contents kept.
    for (size_t i = 0; i < k * n; ++i) in.p[i] = out.p[i] = valueOf(rank, i, 7);
    if (braidCommDeregister(world, in.registration) != braidSuccess) return 10;
    braidCommDestroy(world);
    for (size_t i = 0; i < k * n; ++i) {
      wrong += in.p[i] != valueOf(rank, i, 7) || out.p[i] != valueOf(rank, i, 7);
    }
    if (onSharedPages(in.p) || onSharedPages(out.p)) {
      fprintf(stderr, "deregistered buffers are still on shared pages\n");
      return 11;
    }
  } else {
    braidCommDestroy(world);
  }
  if (wrong != 0) fprintf(stderr, "%d wrong elements\n", wrong);
  return wrong == 0 ? 0 : 1;
}

struct Case {
  int nranks;
  bool allShared;
  bool registered;  // heap buffers registered, not braidMemAlloc's
};

class Windows : public ::testing::TestWithParam<Case> {};

TEST_P(Windows, BuffersFromMemAllocAreReadInPlaceAndCallsReturnOnlyWhenPeersAreDone) {
  const Case c = GetParam();
  Env env = jobEnv(c.nranks);
  env["BRAID_TRANSPORTS"] = "shm";
  env["BRAID_TIMEOUT_MS"] = "60000";
  env["BRAID_SHM_WINDOW_BYTES"] = "4096";
  env["BRAID_ALGO"] =
      "allreduce:0-200k:two_shot#allreduce:200k-4m:direct#allreduce:4m-6m:two_shot#"
      "allreduce:6m-inf:direct#allgather:direct#"
      "broadcast:direct#alltoall:pairwise#reducescatter:direct";
  auto outcomes = runRanks(
      c.nranks, env, [&](int r) { return body(r, c.allShared, c.registered); }, 300);
  for (int r = 0; r < c.nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

INSTANTIATE_TEST_SUITE_P(Jobs, Windows,
                         // 2_all_shared: two-shot calls run one-shot (both inputs
                         // lent); 2_mixed keeps two-shot with one lent input.
                         ::testing::Values(Case{2, true, false}, Case{2, false, false},
                                           Case{3, false, false},
                                           Case{4, true, false}, Case{2, true, true},
                                           Case{3, false, true}),
                         [](const auto& info) {
                           return std::to_string(info.param.nranks) +
                                  (info.param.allShared ? "_all_shared" : "_mixed") +
                                  (info.param.registered ? "_registered" : "");
                         });

// Private buffers of many default-sized rounds: copies into the windows and
// into the FIFO slots use streaming stores from 24 KiB up (exec/stream_copy.h).
// Odd counts leave every copy's tail unaligned; in place and out of place.
int bodyPrivate(int rank) {
  braidComm_t world = nullptr;
  if (braidCommInitFromEnv(&world, nullptr) != braidSuccess) return 2;
  int n = 0;
  braidCommCount(world, &n);
  int wrong = 0;
  const auto expect = [&](const float* got, const std::vector<float>& w, size_t count) {
    for (size_t i = 0; i < count; ++i) wrong += got[i] != w[i];
  };
  // 1.2 MB per rank: two rounds of 1 MiB windows; 4.4 MB: outputs from 4 MiB
  // up are streamed too.
  for (size_t k : {size_t{300007}, size_t{1100003}}) {
    std::vector<float> in(k * n), out(k * n), want(k * n);
    for (int it = 0; it < 2; ++it) {
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        // All-reduce.
        for (size_t i = 0; i < k; ++i) in[i] = valueOf(rank, i, it);
        for (size_t i = 0; i < k; ++i) {
          want[i] = 0;
          for (int r = 0; r < n; ++r) want[i] += valueOf(r, i, it);
        }
        float* dst = inPlace ? in.data() : out.data();
        if (braidAllReduce(in.data(), dst, k, braidFloat32, braidSum, world, nullptr) != 0) {
          fprintf(stderr, "allreduce: %s\n", braidGetLastError(world));
          return 4;
        }
        expect(dst, want, k);
        // Reduce-scatter: block j of rank r holds valueOf(r, j * k + i).
        for (size_t i = 0; i < k * n; ++i) in[i] = valueOf(rank, i, it);
        for (size_t i = 0; i < k; ++i) {
          want[i] = 0;
          for (int r = 0; r < n; ++r) want[i] += valueOf(r, rank * k + i, it);
        }
        dst = inPlace ? in.data() + rank * k : out.data();
        if (braidReduceScatter(in.data(), dst, k, braidFloat32, braidSum, world, nullptr) != 0) {
          return 5;
        }
        expect(dst, want, k);
        // All-gather.
        float* send = inPlace ? out.data() + rank * k : in.data();
        for (size_t i = 0; i < k; ++i) send[i] = valueOf(rank, i, it);
        if (braidAllGather(send, out.data(), k, braidFloat32, world, nullptr) != 0) return 6;
        for (int r = 0; r < n; ++r) {
          for (size_t i = 0; i < k; ++i) wrong += out[r * k + i] != valueOf(r, i, it);
        }
        // Broadcast from the last rank.
        for (size_t i = 0; i < k; ++i) in[i] = valueOf(rank, i, it);
        dst = inPlace ? in.data() : out.data();
        if (braidBroadcast(in.data(), dst, k, braidFloat32, n - 1, world, nullptr) != 0) return 7;
        for (size_t i = 0; i < k; ++i) wrong += dst[i] != valueOf(n - 1, i, it);
        // All-to-all: rank r's block j is valueOf(r, j * k + i); out of place only.
        if (inPlace) continue;
        for (size_t i = 0; i < k * n; ++i) in[i] = valueOf(rank, i, it);
        if (braidAlltoAll(in.data(), out.data(), k, braidFloat32, world, nullptr) != 0) return 8;
        for (int r = 0; r < n; ++r) {
          for (size_t i = 0; i < k; ++i) wrong += out[r * k + i] != valueOf(r, rank * k + i, it);
        }
      }
    }
  }
  braidCommDestroy(world);
  if (wrong != 0) fprintf(stderr, "%d wrong elements\n", wrong);
  return wrong == 0 ? 0 : 1;
}

struct PrivateCase {
  int nranks;
  const char* name;
  const char* algo;
};

class StreamedCopies : public ::testing::TestWithParam<PrivateCase> {};

TEST_P(StreamedCopies, PrivateBuffersOfManyRoundsAreExact) {
  const PrivateCase c = GetParam();
  Env env = jobEnv(c.nranks);
  env["BRAID_TRANSPORTS"] = "shm";
  env["BRAID_TIMEOUT_MS"] = "60000";
  env["BRAID_ALGO"] = c.algo;
  auto outcomes = runRanks(
      c.nranks, env, [&](int r) { return bodyPrivate(r); }, 300);
  for (int r = 0; r < c.nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

constexpr const char* kWindowAlgos =
    "allreduce:direct#reducescatter:direct#allgather:direct#broadcast:direct#alltoall:pairwise";
constexpr const char* kTwoShotAlgos = "allreduce:two_shot";
constexpr const char* kFifoAlgos =
    "allreduce:ring#reducescatter:ring#allgather:ring#broadcast:ring#alltoall:bruck";

INSTANTIATE_TEST_SUITE_P(Jobs, StreamedCopies,
                         ::testing::Values(PrivateCase{2, "windows", kWindowAlgos},
                                           PrivateCase{3, "windows", kWindowAlgos},
                                           PrivateCase{2, "two_shot", kTwoShotAlgos},
                                           PrivateCase{3, "two_shot", kTwoShotAlgos},
                                           PrivateCase{2, "fifo", kFifoAlgos},
                                           PrivateCase{3, "fifo", kFifoAlgos}),
                         [](const auto& info) {
                           return std::to_string(info.param.nranks) + "_" + info.param.name;
                         });

// Broadcasts of at most one cache line ride in a ring of lines in the root's window
// header (exec/host/shared_windows_small.cc): the root returns at once and may run up to the ring's
// depth ahead. Every call's value differs, so a root that overwrote a line a slow peer
// had not read yet (the peers sleep now and then, so the root reaches that limit),
// or a peer that read a stale line, gives a wrong element. Small broadcasts from
// changing roots are mixed with one-line all-reduces and a windowed all-reduce, which
// share the rounds' numbering and the `ready` flags.
int bodySmallBroadcasts(int rank) {
  braidComm_t world = nullptr;
  if (braidCommInitFromEnv(&world, nullptr) != braidSuccess) return 2;
  int n = 0;
  braidCommCount(world, &n);
  int wrong = 0;
  std::vector<float> in(4096), out(4096);
  for (int it = 0; it < 600; ++it) {
    const int root = (it / 40) % n;  // runs of 40 calls from one root
    const size_t count = 1 + it % 14;  // 4 to 56 bytes
    const bool inPlace = it % 3 == 0;
    for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, i, it);
    float* dst = inPlace ? in.data() : out.data();
    if (braidBroadcast(in.data(), dst, count, braidFloat32, root, world, nullptr) != 0) {
      fprintf(stderr, "broadcast: %s\n", braidGetLastError(world));
      return 4;
    }
    for (size_t i = 0; i < count; ++i) wrong += dst[i] != valueOf(root, i, it);
    // At once: peers that have not read yet must not need the root's buffer.
    if (rank == root) std::memset(in.data(), 0xff, count * sizeof(float));
    if (rank != root && it % 23 == 0) usleep(2000);  // the root runs ahead meanwhile
    // From call 300, a one-line all-reduce every 7 calls (every rank waits for every
    // other); before, only every 50th call does, so the root can reach its limit.
    if (it >= 300 && it % 7 == 0) {
      in[0] = valueOf(rank, 0, it);
      if (braidAllReduce(in.data(), out.data(), 1, braidFloat32, braidSum, world, nullptr) != 0) {
        return 5;
      }
      float want = 0;
      for (int r = 0; r < n; ++r) want += valueOf(r, 0, it);
      wrong += out[0] != want;
    }
    if (it % 50 == 49) {  // through the window areas, in rounds
      for (size_t i = 0; i < in.size(); ++i) in[i] = valueOf(rank, i, it);
      if (braidAllReduce(in.data(), out.data(), in.size(), braidFloat32, braidSum, world,
                         nullptr) != 0) {
        return 6;
      }
      for (size_t i = 0; i < in.size(); ++i) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += valueOf(r, i, it);
        wrong += out[i] != want;
      }
    }
  }
  braidCommDestroy(world);
  if (wrong != 0) fprintf(stderr, "%d wrong elements\n", wrong);
  return wrong == 0 ? 0 : 1;
}

class SmallBroadcasts : public ::testing::TestWithParam<int> {};

TEST_P(SmallBroadcasts, RootsRunAheadAndEveryPeerGetsEveryCallsValue) {
  const int nranks = GetParam();
  Env env = jobEnv(nranks);
  env["BRAID_TRANSPORTS"] = "shm";
  env["BRAID_TIMEOUT_MS"] = "60000";
  env["BRAID_SHM_WINDOW_BYTES"] = "4096";  // the 16 KiB all-reduce takes rounds
  env["BRAID_ALGO"] = "broadcast:direct#allreduce:direct";
  auto outcomes = runRanks(nranks, env, [&](int r) { return bodySmallBroadcasts(r); }, 300);
  for (int r = 0; r < nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

INSTANTIATE_TEST_SUITE_P(Jobs, SmallBroadcasts, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_ranks"; });

}  // namespace
}  // namespace braid::test
