// Status and Expected<T>: Braid's errors as values.
//
// A Status is a code (braidResult_t) and a message a user can act on. Inside
// Braid every fallible function returns [[nodiscard]] Status or Expected<T>;
// the C entry points turn them into braidResult_t and keep the message for
// braidGetLastError. Value types; not thread-safe to share mutably.
#pragma once

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "braid/braid.h"

namespace braid {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(braidResult_t code, std::string message)
      : rep_(std::make_unique<Rep>(Rep{code, std::move(message)})) {}
  Status(const Status& o) : rep_(o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr) {}
  Status(Status&&) noexcept = default;
  Status& operator=(const Status& o) {
    if (this != &o) rep_ = o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr;
    return *this;
  }
  Status& operator=(Status&&) noexcept = default;

  static Status ok() { return Status(); }
  bool isOk() const { return code() == braidSuccess; }
  braidResult_t code() const { return rep_ ? rep_->code : braidSuccess; }
  const std::string& message() const { return rep_ ? rep_->message : emptyMessage(); }

  // Prefixes context ("allreduce #12: ") to the message; keeps the code.
  Status withContext(const std::string& context) const {
    if (isOk()) return *this;
    return Status(rep_->code, context + rep_->message);
  }

 private:
  // An ok Status is one null pointer: every call's path returns many, and makes or
  // destroys no string for them.
  struct Rep {
    braidResult_t code;
    std::string message;
  };
  static const std::string& emptyMessage() {
    static const std::string empty;
    return empty;
  }
  std::unique_ptr<Rep> rep_;
};

inline Status invalidArgument(std::string m) { return Status(braidInvalidArgument, std::move(m)); }
inline Status invalidUsage(std::string m) { return Status(braidInvalidUsage, std::move(m)); }
inline Status internalError(std::string m) { return Status(braidInternalError, std::move(m)); }
inline Status remoteError(std::string m) { return Status(braidRemoteError, std::move(m)); }
inline Status timeoutError(std::string m) { return Status(braidTimeout, std::move(m)); }
// A failed system call: names the call's purpose and strerror(err).
// Errors of a system call, with what to do about the limits users hit.
inline Status systemError(const std::string& what, int err = errno) {
  std::string hint;
  if (err == EMFILE || err == ENFILE) {
    hint = " (out of file descriptors: raise the limit, e.g. ulimit -n 65536; Braid uses a few "
           "per peer)";
  } else if (err == EADDRINUSE) {
    hint = " (another process holds that port: pick another, e.g. in BRAID_ROOT)";
  } else if (err == ENOSPC) {
    hint = " (out of space: for /dev/shm, give the container more, e.g. docker --shm-size=1g)";
  }
  return Status(braidSystemError, what + ": " + std::strerror(err) + hint);
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool isOk() const { return std::holds_alternative<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& value() const& { return std::get<T>(v_); }
  Status status() const { return isOk() ? Status::ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace braid

#define BRAID_CONCAT_INNER_(a, b) a##b
#define BRAID_CONCAT_(a, b) BRAID_CONCAT_INNER_(a, b)

// Returns the Status of expr from the enclosing function when it is an error.
#define BRAID_TRY(expr)                           \
  do {                                            \
    ::braid::Status braid_try_status_ = (expr);   \
    if (!braid_try_status_.isOk()) return braid_try_status_; \
  } while (0)

// Declares `lhs` from an Expected expression, or returns its error.
#define BRAID_ASSIGN_OR_RETURN(lhs, expr) \
  BRAID_ASSIGN_OR_RETURN_IMPL_(BRAID_CONCAT_(braid_expected_, __LINE__), lhs, expr)
#define BRAID_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.isOk()) return tmp.status();              \
  lhs = std::move(tmp).value()
