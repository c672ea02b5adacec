// All-reduce from C++ over braid.hpp (header-only, C++20): a RAII communicator and
// results that carry Braid's message. Run under a launcher: braidrun -n 4 ./allreduce_cpp
#include <braid/braid.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  braid::Communicator comm;
  if (braid::Result r = braid::Communicator::fromEnv(&comm); !r) {
    std::fprintf(stderr, "init: %s\n", r.message().c_str());
    return 1;
  }
  const int rank = comm.rank(), n = comm.size();

  // Out of place, int64 max: every element ends as the largest rank's value.
  std::vector<int64_t> send(4096), recv(send.size());
  for (size_t i = 0; i < send.size(); ++i) send[i] = int64_t(rank) * 1000000 + int64_t(i);
  if (braid::Result r = comm.allReduce<int64_t>(send, recv, braidMax); !r) {
    std::fprintf(stderr, "rank %d: allReduce: %s\n", rank, r.message().c_str());
    return 1;
  }
  // In place, double sum of 0.5 * (rank + 1): exact in binary floating point.
  std::vector<double> x(1000, 0.5 * (rank + 1));
  if (braid::Result r = comm.allReduce<double>(x); !r) {
    std::fprintf(stderr, "rank %d: allReduce: %s\n", rank, r.message().c_str());
    return 1;
  }

  bool exact = true;
  for (size_t i = 0; i < recv.size(); ++i) exact &= recv[i] == int64_t(n - 1) * 1000000 + int64_t(i);
  for (double v : x) exact &= v == 0.25 * n * (n + 1);
  std::printf("rank %d of %d: max and sum %s\n", rank, n, exact ? "exact" : "WRONG");
  return exact ? 0 : 1;  // ~Communicator destroys the communicator
}
