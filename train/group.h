// Group: one axis of the device mesh (tensor, pipeline, data, expert...) as a
// Braid communicator plus accounting. A group of size 1 has no communicator
// and every call is a local no-op (or copy), so the dense model is the same
// code with every group of size 1. Communication failures end the process
// with a message naming the rank, the group and the operation: a training
// step cannot continue without its collectives. Not thread-safe: one trainer
// thread uses it (asynchronous work runs on a Braid host stream).
#pragma once

#include <braid/braid.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace braid::train {

// Calls, bytes and blocking time per "group.collective", over a whole run and
// per step.
class CommStats {
 public:
  struct Counter {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    double seconds = 0;  // blocking time; asynchronous calls count 0 here
    double busFactor = 1;
  };
  void add(const std::string& key, uint64_t bytes, double seconds, double busFactor);
  // Time spent waiting on communication (blocking calls and stream syncs).
  void addExposed(double seconds) { exposed_ += seconds; }
  double exposed() const { return exposed_; }
  const std::map<std::string, Counter>& total() const { return total_; }
  const std::map<std::string, Counter>& step() const { return step_; }
  void startStep() { step_.clear(); }

 private:
  std::map<std::string, Counter> total_;
  std::map<std::string, Counter> step_;
  double exposed_ = 0;
};

inline double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <typename F>
constexpr braidDataType_t dtypeOf() {
  return sizeof(F) == 8 ? braidFloat64 : braidFloat32;
}

class Group {
 public:
  Group() = default;  // size 1
  Group(std::string name, braidComm_t comm, CommStats* stats);

  int size() const { return size_; }
  int rank() const { return rank_; }
  braidComm_t comm() const { return comm_; }
  const std::string& name() const { return name_; }

  template <typename F>
  void allReduce(F* buf, size_t n, braidRedOp_t op = braidSum) const {
    if (size_ > 1) allReduceRaw(buf, n, dtypeOf<F>(), sizeof(F), op, nullptr);
  }
  // Enqueues on a host stream; the caller synchronises the stream.
  template <typename F>
  void allReduceAsync(F* buf, size_t n, braidStream_t stream) const {
    if (size_ > 1) allReduceRaw(buf, n, dtypeOf<F>(), sizeof(F), braidSum, stream);
  }
  // send holds size() * recvCount elements; recv gets this rank's reduced block.
  template <typename F>
  void reduceScatter(const F* send, F* recv, size_t recvCount) const {
    reduceScatterRaw(send, recv, recvCount, dtypeOf<F>(), sizeof(F), nullptr);
  }
  // Enqueues on a host stream; send must stay untouched until it is synchronised.
  template <typename F>
  void reduceScatterAsync(const F* send, F* recv, size_t recvCount, braidStream_t stream) const {
    reduceScatterRaw(send, recv, recvCount, dtypeOf<F>(), sizeof(F), stream);
  }
  template <typename F>
  void allGather(const F* send, F* recv, size_t sendCount) const {
    allGatherRaw(send, recv, sendCount, dtypeOf<F>(), sizeof(F));
  }
  // Element counts and displacements per peer.
  template <typename F>
  void alltoallv(const F* send, const std::vector<size_t>& sendCounts, F* recv,
                 const std::vector<size_t>& recvCounts) const {
    alltoallvRaw(send, sendCounts, recv, recvCounts, dtypeOf<F>(), sizeof(F));
  }
  // count uint64 per peer.
  void alltoallCounts(const uint64_t* send, uint64_t* recv, size_t count) const;
  // Sends to sendPeer and receives from recvPeer as one Braid group; a peer
  // of -1 (or a count of 0) leaves that half out.
  template <typename F>
  void sendRecv(const F* send, size_t sendCount, int sendPeer, F* recv, size_t recvCount,
                int recvPeer) const {
    sendRecvRaw(send, sendCount, sendPeer, recv, recvCount, recvPeer, dtypeOf<F>(), sizeof(F));
  }

 private:
  void allReduceRaw(void* buf, size_t n, braidDataType_t t, size_t es, braidRedOp_t op,
                    braidStream_t stream) const;
  void reduceScatterRaw(const void* send, void* recv, size_t n, braidDataType_t t, size_t es,
                        braidStream_t stream) const;
  void allGatherRaw(const void* send, void* recv, size_t n, braidDataType_t t, size_t es) const;
  void alltoallvRaw(const void* send, const std::vector<size_t>& sc, void* recv,
                    const std::vector<size_t>& rc, braidDataType_t t, size_t es) const;
  void sendRecvRaw(const void* send, size_t sn, int sp, void* recv, size_t rn, int rp,
                   braidDataType_t t, size_t es) const;
  void check(braidResult_t r, const char* what) const;
  void record(const char* coll, uint64_t bytes, double seconds, double busFactor) const;

  std::string name_ = "self";
  braidComm_t comm_ = nullptr;
  CommStats* stats_ = nullptr;
  int size_ = 1;
  int rank_ = 0;
};

// Fatal error with the world rank in front; used where a run cannot go on.
[[noreturn]] void fatal(const std::string& message);
void setLogRank(int rank);

}  // namespace braid::train
