// Header-only C++ over braid.h: an owning Communicator, type-deduced
// collectives, and results as values (no exceptions). Nothing here crosses the
// ABI; it only calls the C API. Thread-safety as braid.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "braid/braid.h"

namespace braid {

// A result code with its message (from braidGetLastError at the time).
class Result {
 public:
  Result() = default;
  Result(braidResult_t code, std::string message) : code_(code), message_(std::move(message)) {}
  bool ok() const { return code_ == braidSuccess; }
  explicit operator bool() const { return ok(); }
  braidResult_t code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  braidResult_t code_ = braidSuccess;
  std::string message_;
};

template <typename T>
constexpr braidDataType_t dataTypeOf();
template <> constexpr braidDataType_t dataTypeOf<int8_t>() { return braidInt8; }
template <> constexpr braidDataType_t dataTypeOf<uint8_t>() { return braidUint8; }
template <> constexpr braidDataType_t dataTypeOf<int32_t>() { return braidInt32; }
template <> constexpr braidDataType_t dataTypeOf<uint32_t>() { return braidUint32; }
template <> constexpr braidDataType_t dataTypeOf<int64_t>() { return braidInt64; }
template <> constexpr braidDataType_t dataTypeOf<uint64_t>() { return braidUint64; }
template <> constexpr braidDataType_t dataTypeOf<float>() { return braidFloat32; }
template <> constexpr braidDataType_t dataTypeOf<double>() { return braidFloat64; }

// Owns a braidComm_t; destroys it when it goes out of scope. Move-only.
class Communicator {
 public:
  Communicator() = default;
  explicit Communicator(braidComm_t comm) : comm_(comm) {}
  Communicator(Communicator&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  Communicator& operator=(Communicator&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() { reset(); }

  // The world communicator from the launcher's environment.
  static Result fromEnv(Communicator* out) {
    braidComm_t c = nullptr;
    braidResult_t r = braidCommInitFromEnv(&c, nullptr);
    if (r != braidSuccess) return Result(r, braidGetLastError(nullptr));
    *out = Communicator(c);
    return Result();
  }
  static Result initRank(Communicator* out, int nranks, const braidUniqueId& id, int rank) {
    braidComm_t c = nullptr;
    braidResult_t r = braidCommInitRank(&c, nranks, id, rank);
    if (r != braidSuccess) return Result(r, braidGetLastError(nullptr));
    *out = Communicator(c);
    return Result();
  }

  braidComm_t get() const { return comm_; }
  int rank() const {
    int r = -1;
    braidCommUserRank(comm_, &r);
    return r;
  }
  int size() const {
    int n = 0;
    braidCommCount(comm_, &n);
    return n;
  }

  template <typename T>
  Result allReduce(std::span<const T> send, std::span<T> recv, braidRedOp_t op = braidSum,
                   braidStream_t stream = nullptr) {
    if (send.size() != recv.size()) {
      return Result(braidInvalidArgument, "allReduce: send and recv sizes differ");
    }
    return check(braidAllReduce(send.data(), recv.data(), send.size(), dataTypeOf<T>(), op,
                                comm_, stream));
  }
  template <typename T>
  Result allReduce(std::span<T> inPlace, braidRedOp_t op = braidSum,
                   braidStream_t stream = nullptr) {
    return check(braidAllReduce(inPlace.data(), inPlace.data(), inPlace.size(), dataTypeOf<T>(),
                                op, comm_, stream));
  }

  // A premul-sum op for T with this rank's `scalar`, copied now (braidRedOpCreatePreMulSum),
  // to pass as `op`; destroyOp frees it once the calls using it have returned.
  template <typename T>
  Result preMulSum(T scalar, braidRedOp_t* op) {
    return check(braidRedOpCreatePreMulSum(op, &scalar, dataTypeOf<T>(),
                                           braidScalarHostImmediate, comm_));
  }
  Result destroyOp(braidRedOp_t op) { return check(braidRedOpDestroy(op, comm_)); }

  // The algorithm a call of `collective` with `count` elements of T runs here,
  // and the cost model's predicted microseconds (braidCommGetAlgorithm).
  template <typename T>
  Result algorithm(braidCollective_t collective, size_t count, const char** name,
                   double* predictedUs = nullptr) const {
    return check(braidCommGetAlgorithm(comm_, collective, count, dataTypeOf<T>(), name,
                                       predictedUs));
  }

  // The survivors of `excluded` (every surviving rank calls it alike).
  Result shrink(std::span<const int> excluded, Communicator* out,
                int flags = BRAID_SHRINK_DEFAULT) {
    braidComm_t c = nullptr;
    braidResult_t r = braidCommShrink(comm_, const_cast<int*>(excluded.data()),
                                      static_cast<int>(excluded.size()), &c, nullptr, flags);
    if (r != braidSuccess) return check(r);
    *out = Communicator(c);
    return Result();
  }

  Result abort() {
    braidResult_t r = braidCommAbort(comm_);
    comm_ = nullptr;
    return r == braidSuccess ? Result() : Result(r, braidGetLastError(nullptr));
  }

 private:
  Result check(braidResult_t r) const {
    return r == braidSuccess ? Result() : Result(r, braidGetLastError(comm_));
  }
  void reset() {
    if (comm_ != nullptr) braidCommDestroy(comm_);
    comm_ = nullptr;
  }

  braidComm_t comm_ = nullptr;
};

}  // namespace braid
