// Every collective over real processes (shm and socket): each algorithm that
// implements it, random sequences of mixed calls on the world and on split
// communicators, groups of sends and receives, each result checked against
// tests/common/reference.h.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "colls.h"
#include "spawn.h"
#include "tests/common/reference.h"

namespace braid::test {
namespace {

bool reduces(int c) { return c == kAllReduce || c == kReduceScatter || c == kReduce; }

// Runs one collective with checked data; returns the number of wrong elements
// (or a large number when the call failed).
size_t runAndCheck(braidComm_t comm, int c, size_t k, braidDataType_t t, braidRedOp_t op, int root,
                   bool inPlace, std::mt19937& rng) {
  int n = 0, r = 0;
  braidCommCount(comm, &n);
  braidCommUserRank(comm, &r);
  const size_t es = elemSize(t);
  const braidRedOp_t vop = reduces(c) ? op : braidSum;
  const bool big = c == kAllGather || c == kGather || c == kAllToAll;
  const bool bigIn = c == kReduceScatter || c == kScatter || c == kAllToAll;
  // all-to-all-v: counts m[src*n+dst] from the generator every rank shares;
  // blocks are packed with a one-element gap after each.
  std::vector<size_t> m(static_cast<size_t>(n) * n), sc(n), sd(n), rc(n), rd(n);
  size_t vin = 0, vout = 0;
  if (c == kAllToAllv) {
    for (auto& x : m) x = rng() % (k + 1);
    for (int p = 0; p < n; ++p) {
      sc[p] = m[r * n + p], sd[p] = vin, vin += sc[p] + 1;
      rc[p] = m[p * n + r], rd[p] = vout, vout += rc[p] + 1;
    }
  }
  // Where rank p's block for rank r starts in p's input.
  auto sendDisplOf = [&](int p) {
    size_t at = 0;
    for (int q = 0; q < r; ++q) at += m[p * n + q] + 1;
    return at;
  };
  size_t inElems = c == kAllToAllv ? vin : bigIn ? n * k : k;
  size_t outElems = c == kAllToAllv ? vout : big ? n * k : k;
  std::vector<char> out((outElems + inElems + 1) * es, 0x5a), in(inElems * es + 1);
  for (size_t i = 0; i < inElems; ++i) store(t, in.data(), i, inputValue(t, vop, r, n, i));
  const void* send = in.data();
  void* recv = out.data();
  if (inPlace && c != kAllToAllv) {
    // Place the input where NCCL's in-place form puts it.
    size_t at = (c == kAllGather || c == kGather) ? r * k : 0;
    std::memcpy(out.data() + at * es, in.data(), inElems * es);
    send = out.data() + at * es;
    if (c == kReduceScatter || c == kScatter) recv = out.data() + r * k * es;
  }
  braidResult_t res = braidSuccess;
  switch (c) {
    case kAllReduce:
      res = braidAllReduce(send, recv, k, t, op, comm, nullptr);
      break;
    case kAllGather:
      res = braidAllGather(send, recv, k, t, comm, nullptr);
      break;
    case kReduceScatter:
      res = braidReduceScatter(send, recv, k, t, op, comm, nullptr);
      break;
    case kBroadcast:
      res = braidBroadcast(send, recv, k, t, root, comm, nullptr);
      break;
    case kReduce:
      res = braidReduce(send, recv, k, t, op, root, comm, nullptr);
      break;
    case kGather:
      res = braidGather(send, recv, k, t, root, comm, nullptr);
      break;
    case kScatter:
      res = braidScatter(send, recv, k, t, root, comm, nullptr);
      break;
    case kAllToAll:
      res = braidAlltoAll(send, recv, k, t, comm, nullptr);
      break;
    case kAllToAllv:
      res =
          braidAlltoAllv(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), t, comm, nullptr);
      break;
  }
  if (res != braidSuccess) {
    fprintf(stderr, "rank %d: %s failed: %s\n", r, kCollNames[c], braidGetLastError(comm));
    return 1u << 30;
  }
  auto in_ = [&](int p, size_t i) { return inputValue(t, vop, p, n, i); };
  size_t wrong = 0;
  for (size_t j = 0; j < outElems; ++j) {
    double want = 0;
    bool defined = true;
    switch (c) {
      case kAllReduce:
        want = expectedValue(t, op, n, j);
        break;
      case kReduce:
        want = expectedValue(t, op, n, j);
        defined = r == root;
        break;
      case kReduceScatter:
        want = expectedValue(t, op, n, r * k + j);
        break;
      case kAllGather:
        want = in_(j / k, j % k);
        break;
      case kGather:
        want = in_(j / k, j % k);
        defined = r == root;
        break;
      case kBroadcast:
        want = in_(root, j);
        break;
      case kScatter:
        want = in_(root, r * k + j);
        break;
      case kAllToAll:
        want = in_(j / k, r * k + j % k);
        break;
      case kAllToAllv:
        defined = false;
        for (int p = 0; p < n; ++p) {
          if (j >= rd[p] && j < rd[p] + rc[p]) {
            defined = true;
            want = in_(p, sendDisplOf(p) + (j - rd[p]));
          }
        }
        break;
    }
    if (!defined) continue;
    double got = load(t, static_cast<char*>(recv), j);
    if (got != want && wrong++ < 3) {
      fprintf(stderr, "rank %d %s n=%d k=%zu t=%d op=%d root=%d inPlace=%d: [%zu]=%g want %g\n", r,
              kCollNames[c], n, k, t, op, root, inPlace, j, got, want);
    }
  }
  return wrong;
}

struct AlgoCase {
  const char* algo;
  std::vector<int> colls;
};
const AlgoCase kAlgos[] = {
    {"ring", {kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce}},
    {"tree", {kAllReduce, kBroadcast, kReduce}},
    {"halving_doubling", {kAllReduce, kReduceScatter, kAllGather}},
    {"bruck", {kAllToAll, kAllGather}},
    {"pairwise", {kAllToAll, kAllToAllv}},
    {"linear", {kGather, kScatter}},
    {"direct", {kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce}},
    {"two_shot", {kAllReduce}},
    {"hierarchical", {kAllReduce, kAllGather, kReduceScatter, kBroadcast}},
};

// A communicator over the same ranks whose BRAID_ALGO forces `a` for its colls.
braidComm_t commForcing(braidComm_t world, const AlgoCase& a) {
  std::string spec;
  for (int c : a.colls) spec += std::string(spec.empty() ? "" : "#") + kCollNames[c] + ":" + a.algo;
  setenv("BRAID_ALGO", spec.c_str(), 1);
  int r = 0;
  braidCommUserRank(world, &r);
  braidComm_t sub = nullptr;
  braidResult_t res = braidCommSplit(world, 0, r, &sub, nullptr);
  unsetenv("BRAID_ALGO");
  if (res != braidSuccess) fprintf(stderr, "split: %s\n", braidGetLastError(world));
  return sub;
}

int everyAlgorithmBody() {
  braidComm_t world;
  if (braidCommInitFromEnv(&world, nullptr) != braidSuccess) return 2;
  int n = 0;
  braidCommCount(world, &n);
  std::mt19937 rng(1234);  // identical on every rank
  const std::pair<braidDataType_t, braidRedOp_t> kTypeOps[] = {
      {braidFloat32, braidSum},  {braidInt32, braidMax}, {braidFloat16, braidAvg},
      {braidBfloat16, braidSum}, {braidInt8, braidProd}, {braidUint64, braidMin},
      {braidFloat64, braidAvg},  {braidUint8, braidSum}, {braidInt64, braidMin},
      {braidUint32, braidProd}};
  size_t wrong = 0;
  for (const AlgoCase& a : kAlgos) {
    braidComm_t comm = commForcing(world, a);
    if (comm == nullptr) return 3;
    for (int c : a.colls) {
      for (size_t k : {size_t{0}, size_t{1}, size_t(n + 1), size_t{1009}, size_t{70001}}) {
        for (bool inPlace : {false, true}) {
          for (const auto& [t, op] : kTypeOps) {
            if (k != 1009 && t != braidFloat32) continue;
            int root = static_cast<int>(rng() % n);
            wrong += runAndCheck(comm, c, k, t, op, root, inPlace, rng);
          }
        }
      }
    }
    braidCommDestroy(comm);
  }
  braidCommDestroy(world);
  return wrong == 0 ? 0 : 1;
}

// Premul-sum ops (braidRedOpCreatePreMulSum) on host buffers: the sum of every rank's
// input times that rank's own scalar, by value or read through a pointer when the call
// runs, and inside a group whose op is destroyed before the group ends.
double preMulScalar(braidDataType_t t, int rank) {
  const bool narrow = t == braidFloat16 || t == braidBfloat16 || t == braidInt8 || t == braidUint8;
  return narrow ? 2 - rank % 2 : rank + 2;  // every scaled sum stays exact in the type
}

size_t checkPreMul(const char* what, braidDataType_t t, int n, int r, size_t k, int root,
                   int c, const void* out) {
  size_t wrong = 0;
  for (size_t j = 0; j < k && (c != kReduce || r == root); ++j) {
    const size_t i = c == kReduceScatter ? r * k + j : j;
    double want = 0;
    for (int p = 0; p < n; ++p) want += preMulScalar(t, p) * inputValue(t, braidSum, p, n, i);
    const double got = load(t, out, j);
    if (got != want && wrong++ < 3) {
      fprintf(stderr, "rank %d %s %s t=%d k=%zu: [%zu]=%g want %g\n", r, what, kCollNames[c], t,
              k, j, got, want);
    }
  }
  return wrong;
}

int preMulBody() {
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  int n = 0, r = 0;
  braidCommCount(comm, &n);
  braidCommUserRank(comm, &r);
  size_t wrong = 0;
  int seq = 0;
  auto run = [&](int c, braidDataType_t t, size_t k, bool inPlace, braidRedOp_t op,
                 braidStream_t stream, std::vector<char>* out, std::vector<char>* in) {
    const size_t es = elemSize(t), inElems = c == kReduceScatter ? n * k : k;
    in->assign(inElems * es + 1, 0);
    for (size_t i = 0; i < inElems; ++i) store(t, in->data(), i, inputValue(t, braidSum, r, n, i));
    out->assign(inElems * es + 1, 0x5a);
    const void* send = in->data();
    char* recv = out->data();
    if (inPlace) {
      std::memcpy(out->data(), in->data(), inElems * es);
      send = out->data();
      if (c == kReduceScatter) recv += r * k * es;
    }
    const int root = ++seq % n;
    braidResult_t res = c == kAllReduce ? braidAllReduce(send, recv, k, t, op, comm, stream)
                        : c == kReduceScatter
                            ? braidReduceScatter(send, recv, k, t, op, comm, stream)
                            : braidReduce(send, recv, k, t, op, root, comm, stream);
    if (res != braidSuccess) {
      fprintf(stderr, "rank %d: premul %s: %s\n", r, kCollNames[c], braidGetLastError(comm));
      return std::pair<size_t, int>{size_t{1} << 30, root};
    }
    return std::pair<size_t, int>{recv - out->data(), root};
  };
  const braidDataType_t kTypes[] = {braidFloat32, braidFloat16, braidBfloat16, braidInt8,
                                    braidUint8,   braidInt32,   braidUint64,   braidFloat64};
  std::vector<char> out, in;
  for (int c : {kAllReduce, kReduceScatter, kReduce}) {
    for (braidDataType_t t : kTypes) {
      for (size_t k : {size_t{0}, size_t{1}, size_t{1009}, size_t{70001}}) {
        if (k != 1009 && t != braidFloat32) continue;
        for (bool inPlace : {false, true}) {
          unsigned char scalar[8] = {};
          store(t, scalar, 0, preMulScalar(t, r));
          braidRedOp_t op;
          if (braidRedOpCreatePreMulSum(&op, scalar, t, braidScalarHostImmediate, comm) !=
              braidSuccess) {
            return 3;
          }
          store(t, scalar, 0, 9);  // held by value: changes nothing
          auto [at, root] = run(c, t, k, inPlace, op, nullptr, &out, &in);
          wrong += at >= out.size() ? at : checkPreMul("value", t, n, r, k, root, c, &out[at]);
          if (braidRedOpDestroy(op, comm) != braidSuccess) return 4;
        }
      }
    }
  }
  // By pointer (braidScalarDevice on host memory), on a host stream, read when it runs.
  double scalar = 9;
  braidRedOp_t op;
  braidStream_t stream;
  if (braidStreamCreate(&stream) != braidSuccess ||
      braidRedOpCreatePreMulSum(&op, &scalar, braidFloat64, braidScalarDevice, comm) !=
          braidSuccess) {
    return 5;
  }
  scalar = preMulScalar(braidFloat64, r);
  auto [at, root] = run(kAllReduce, braidFloat64, 1009, false, op, stream, &out, &in);
  braidStreamSynchronize(stream);
  wrong += at >= out.size() ? at : checkPreMul("pointer", braidFloat64, n, r, 1009, root,
                                               kAllReduce, &out[at]);
  // In a group, destroyed before the group ends: the call kept its scalar.
  braidGroupStart();
  auto grouped = run(kReduceScatter, braidFloat64, 333, false, op, nullptr, &out, &in);
  braidRedOpDestroy(op, comm);
  if (braidGroupEnd() != braidSuccess) {
    fprintf(stderr, "rank %d: group: %s\n", r, braidGetLastError(comm));
    return 6;
  }
  wrong += grouped.first >= out.size()
               ? grouped.first
               : checkPreMul("group", braidFloat64, n, r, 333, grouped.second, kReduceScatter,
                             &out[grouped.first]);
  braidStreamDestroy(stream);
  braidCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}

struct Job {
  int nranks;
  const char* transport;
  // BRAID_SHM_WINDOW_BYTES: "4096" makes direct calls on shared windows run
  // in many rounds; "0" sends them through the FIFO schedules instead.
  const char* window = nullptr;
  // Single copy over shm (BRAID_SHM_CMA): kSingleCopyOff turns it off, kSingleCopyAll
  // posts every FIFO send by address, whatever its size; nullptr: as priced.
  const char* singleCopy = nullptr;
};
constexpr const char* kSingleCopyOff = "off";
constexpr const char* kSingleCopyAll = "all";

std::string jobName(const Job& j) {
  std::string name = std::string(j.transport) + "_" + std::to_string(j.nranks);
  if (j.window != nullptr) name += std::string("_window") + j.window;
  if (j.singleCopy != nullptr) name += std::string("_single_copy_") + j.singleCopy;
  return name;
}

Env envFor(const Job& j) {
  Env env = jobEnv(j.nranks);
  env["BRAID_TRANSPORTS"] = j.transport;
  env["BRAID_TIMEOUT_MS"] = "60000";
  if (j.window != nullptr) env["BRAID_SHM_WINDOW_BYTES"] = j.window;
  if (j.singleCopy == kSingleCopyOff) env["BRAID_SHM_CMA"] = "0";
  if (j.singleCopy == kSingleCopyAll) {
    env["BRAID_SHM_CMA_MIN_BYTES"] = "1";
    env["BRAID_DEBUG"] = "INFO";  // the test checks that single copy was on
  }
  return env;
}

// Where a job forces single copy, every rank said it would use it (a test that passed
// over the FIFOs alone would prove nothing). False where the system refuses it (Yama's
// ptrace_scope above 0, a seccomp filter): the job then tested the FIFOs only.
bool singleCopyWasOn(const Job& j, const std::string& output, int rank) {
  if (j.singleCopy != kSingleCopyAll) return true;
  if (output.find("single-copy transfers (process_vm_readv) are refused") != std::string::npos) {
    return false;
  }
  EXPECT_NE(output.find("sends of 1 bytes and up go by single copy"), std::string::npos)
      << "rank " << rank << ":\n" << output;
  return true;
}

class Collectives : public ::testing::TestWithParam<Job> {};

TEST_P(Collectives, EveryAlgorithmOfEveryCollectiveIsExact) {
  Job j = GetParam();
  Env env = envFor(j);
  auto outcomes = runRanks(
      j.nranks, env, [](int) { return everyAlgorithmBody(); }, 300);
  bool singleCopy = true;
  for (int r = 0; r < j.nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
    singleCopy = singleCopyWasOn(j, outcomes[r].output, r) && singleCopy;
  }
  if (!singleCopy) GTEST_SKIP() << "exact over the FIFOs, but this system refuses single copy";
}

TEST_P(Collectives, PreMulSumScalesEachRanksInputByItsOwnScalar) {
  Job j = GetParam();
  auto outcomes = runRanks(
      j.nranks, envFor(j), [](int) { return preMulBody(); }, 120);
  for (int r = 0; r < j.nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

// Random mixed calls on the world and on split communicators, interleaved.
// A call reuses the last call's resolution (algorithm, schedule arguments, description) only
// where its shape is the same (runtime/host_calls.cc): calls of one collective and count
// that differ from the call before in one thing only (a datatype of the same size, the op,
// the root, in place) are each exact, and so is the same call made again.
int oneThingApartBody() {
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  int n = 0;
  braidCommCount(comm, &n);
  std::mt19937 rng(7);  // identical on every rank
  struct Shape {
    braidDataType_t t;
    braidRedOp_t op;
    int root;
    bool inPlace;
  };
  // Each call after the first of its pair; the datatypes are both of 2 bytes, which read as
  // each other's give other sums.
  const std::pair<Shape, Shape> pairs[] = {
      {{braidFloat16, braidSum, 0, false}, {braidBfloat16, braidSum, 0, false}},
      {{braidFloat32, braidSum, 0, false}, {braidFloat32, braidMax, 0, false}},
      {{braidFloat32, braidSum, 0, false}, {braidFloat32, braidSum, n - 1, false}},
      {{braidFloat32, braidSum, 0, false}, {braidFloat32, braidSum, 0, true}}};
  size_t wrong = 0;
  for (int c = 0; c < kNumColls; ++c) {
    for (size_t k : {size_t{3}, size_t{5000}}) {
      for (const auto& [first, then] : pairs) {
        for (const Shape& s : {first, then, then}) {
          wrong += runAndCheck(comm, c, k, s.t, s.op, s.root, s.inPlace, rng);
        }
      }
    }
  }
  braidCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}

int randomSequenceBody(int ops) {
  braidComm_t world;
  if (braidCommInitFromEnv(&world, nullptr) != braidSuccess) return 2;
  int n = 0, r = 0;
  braidCommCount(world, &n);
  braidCommUserRank(world, &r);
  braidComm_t halves = nullptr, allButLast = nullptr;
  if (braidCommSplit(world, r % 2, -r, &halves, nullptr) != braidSuccess) return 3;
  if (braidCommSplit(world, r == n - 1 ? BRAID_SPLIT_NOCOLOR : 0, r, &allButLast, nullptr) !=
      braidSuccess) {
    return 3;
  }
  if ((r == n - 1) != (allButLast == nullptr)) return 4;
  std::mt19937 rng(99);  // identical on every rank
  const braidDataType_t kTypes[] = {braidInt8,    braidUint8,   braidInt32,   braidUint32,
                                    braidInt64,   braidUint64,  braidFloat16, braidFloat32,
                                    braidFloat64, braidBfloat16};
  size_t wrong = 0;
  for (int i = 0; i < ops; ++i) {
    int which = rng() % 3;
    braidComm_t comm = which == 0 ? world : which == 1 ? halves : allButLast;
    int c = rng() % kNumColls;
    size_t k = rng() % 3 == 0 ? rng() % 20000 : rng() % 64;
    braidDataType_t t = kTypes[rng() % 10];
    braidRedOp_t op = static_cast<braidRedOp_t>(rng() % 5);
    bool inPlace = rng() % 2;
    int seed = rng();
    if (comm == nullptr) continue;  // this rank is not in that communicator
    int cn = 0;
    braidCommCount(comm, &cn);
    std::mt19937 local(seed);
    wrong += runAndCheck(comm, c, k, t, op, seed % cn < 0 ? 0 : seed % cn, inPlace, local);
  }
  if (allButLast) braidCommDestroy(allButLast);
  braidCommDestroy(halves);
  braidCommDestroy(world);
  return wrong == 0 ? 0 : 1;
}

TEST_P(Collectives, RandomMixedCallsOnWorldAndSplitCommunicators) {
  Job j = GetParam();
  Env env = envFor(j);
  auto outcomes = runRanks(
      j.nranks, env, [](int) { return randomSequenceBody(150); }, 300);
  for (int r = 0; r < j.nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

TEST_P(Collectives, CallsOneThingApartFromTheLastAreEachExact) {
  Job j = GetParam();
  Env env = envFor(j);
  auto outcomes = runRanks(
      j.nranks, env, [](int) { return oneThingApartBody(); }, 120);
  for (int r = 0; r < j.nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

// Makes process_vm_readv fail with EPERM in this process from now on, as a container's
// seccomp profile or Yama's ptrace_scope 2 would; false where the filter cannot be set.
bool refuseProcessVmReadv() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Where the system refuses single copy, Braid finds out at init, says so once at INFO, and
// every collective stays exact over the FIFOs: with every rank refused, and with only rank 1
// refused (rank 0 may read, but must not post sends by address that rank 1 cannot read).
// Single copy is asked for every send (BRAID_SHM_CMA_MIN_BYTES=1), so a rank that tried it
// anyway would fail its first read.
TEST(SingleCopy, RefusedBySeccompIsSaidOnceAndEveryCollectiveStaysExact) {
  for (int refusedFrom : {0, 1}) {
    SCOPED_TRACE(refusedFrom == 0 ? "every rank refused" : "rank 1 refused");
    Job j{2, "shm", "0", kSingleCopyAll};
    auto outcomes = runRanks(
        j.nranks, envFor(j),
        [refusedFrom](int rank) {
          if (rank >= refusedFrom && !refuseProcessVmReadv()) return 9;
          return everyAlgorithmBody();
        },
        120);
    for (int r = 0; r < j.nranks; ++r) {
      const std::string& out = outcomes[r].output;
      EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << out;
      const std::string said = "single-copy transfers (process_vm_readv) are refused";
      const size_t at = out.find(said);
      if (r < refusedFrom) continue;  // rank 0 may read rank 1: it says it will, where allowed
      EXPECT_NE(at, std::string::npos) << "rank " << r << ":\n" << out;
      EXPECT_EQ(out.find(said, at + 1), std::string::npos) << "said twice:\n" << out;
      EXPECT_EQ(out.find("go by single copy"), std::string::npos) << "rank " << r << ":\n" << out;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jobs, Collectives,
                         ::testing::Values(Job{2, "shm"}, Job{3, "shm"}, Job{4, "shm"},
                                           Job{5, "shm"}, Job{7, "shm"}, Job{2, "socket"},
                                           Job{4, "socket"}, Job{5, "socket"},
                                           Job{2, "shm", "4096"}, Job{3, "shm", "4096"},
                                           Job{4, "shm", "4096"}, Job{3, "shm", "0"},
                                           Job{2, "shm", "0", kSingleCopyAll},
                                           Job{4, "shm", "0", kSingleCopyAll},
                                           Job{5, "shm", nullptr, kSingleCopyAll},
                                           Job{4, "shm", "0", kSingleCopyOff}),
                         [](const auto& info) { return jobName(info.param); });

}  // namespace
}  // namespace braid::test
