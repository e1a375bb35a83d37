// Status: the error channel of every fallible call in Strata.
//
// An ok Status is a null pointer, so returning and testing success costs one
// compare on the hot path. An error carries a code (what kind of failure, for
// programs: a server maps it to a protocol status, a test asserts it) and a
// human-readable message that says what is wrong and where (for people). No
// exception crosses a public API: user-facing failures travel as Status /
// StatusOr, internal invariants are asserts.
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "support/source_location.h"

namespace strata {

// The kinds of failure, after absl's and IREE's canonical codes (the same names
// and meanings, so a reader or a gRPC/HTTP front end knows them already).
enum class StatusCode : uint8_t {
  kOk = 0,
  // The caller's input is wrong: a malformed model or text, a bad option, a
  // tensor whose shape contradicts the function's signature.
  kInvalidArgument,
  // A named thing does not exist: a file, a function, a library function, a pass.
  kNotFound,
  // An index or a value past a bound the input itself states (a bounded
  // dimension exceeded, a register or constant index out of its table).
  kOutOfRange,
  // Stored bytes are damaged: an executable or a model file that fails
  // verification, a checksum that does not match.
  kDataLoss,
  // Valid input that Strata does not support (yet): an operator, an opset, a
  // format version, a CPU feature the executable needs.
  kUnimplemented,
  // A limit was reached: memory, a device arena, a stack depth, a step budget.
  kResourceExhausted,
  // The system is not in the state the call needs (a VM loaded without its
  // functions resolved, a device that failed).
  kFailedPrecondition,
  // The caller asked to stop (a cancel flag).
  kCancelled,
  // An invariant of Strata itself broke: a bug, whatever the input.
  kInternal,
};

// "INVALID_ARGUMENT", "DATA_LOSS", ...; "OK" for kOk.
constexpr std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

inline std::ostream& operator<<(std::ostream& out, StatusCode code) { return out << StatusCodeName(code); }

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(StatusCode code, std::string message) {
    assert(code != StatusCode::kOk && "an error needs an error code");
    return Status(code, std::move(message));
  }
  // Bad input is the common case; other kinds name their code.
  static Status Error(std::string message) { return Error(StatusCode::kInvalidArgument, std::move(message)); }

  bool ok() const { return error_ == nullptr; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return error_ ? error_->code : StatusCode::kOk; }
  // The message of an error; empty for ok.
  const std::string& message() const {
    static const std::string kEmpty;
    return error_ ? error_->message : kEmpty;
  }
  // Prepends context ("while loading functions[3]: ") to an error, keeping its
  // code and location; no-op on ok.
  Status WithContext(const std::string& context) && {
    if (error_) error_->message = context + error_->message;
    return std::move(*this);
  }
  // Where in the user's input the error is (a binding's text position or model
  // node), or nullptr. The innermost location wins: WithLocation on an error
  // that has one already changes nothing.
  const SourceLocation* location() const { return error_ && error_->location.known() ? &error_->location : nullptr; }
  Status WithLocation(const SourceLocation& location) && {
    if (error_ && !error_->location.known()) error_->location = location;
    return std::move(*this);
  }

  // True when the error says that a caller's argument does not fit the
  // function's signature (its kind, rank, dtype or a dimension): what the VM's
  // argument and match_shape checks report. Front ends map it to their own
  // "bad input" error (strata.ShapeError in Python) rather than a failure of
  // the program; the code stays kInvalidArgument.
  bool is_signature_mismatch() const { return error_ && error_->signature_mismatch; }
  Status MarkSignatureMismatch() && {
    if (error_) error_->signature_mismatch = true;
    return std::move(*this);
  }

  Status(const Status& other) : error_(other.error_ ? std::make_unique<Payload>(*other.error_) : nullptr) {}
  Status& operator=(const Status& other) {
    error_ = other.error_ ? std::make_unique<Payload>(*other.error_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

 private:
  struct Payload {
    StatusCode code;
    std::string message;
    SourceLocation location;
    bool signature_mismatch = false;
  };
  Status(StatusCode code, std::string message)
      : error_(std::make_unique<Payload>(Payload{code, std::move(message), SourceLocation{}, false})) {}
  std::unique_ptr<Payload> error_;
};

// Builds an error with stream syntax: return ErrorStatus() << "bad " << x;
// for a failure other than bad input, name the code:
//   return ErrorStatus(StatusCode::kDataLoss) << "constants[3]: ...";
class ErrorStatus {
 public:
  explicit ErrorStatus(StatusCode code = StatusCode::kInvalidArgument) : code_(code) {}
  template <typename T>
  ErrorStatus& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  operator Status() const { return Status::Error(code_, stream_.str()); }  // NOLINT

 private:
  StatusCode code_;
  std::ostringstream stream_;
};

// A value or the error that prevented computing it.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "StatusOr constructed from an ok Status without a value");
  }
  StatusOr(const ErrorStatus& status) : StatusOr(Status(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok() && "value() of an error StatusOr");
    return *value_;
  }
  const T& value() const& {
    assert(ok() && "value() of an error StatusOr");
    return *value_;
  }
  T&& value() && {
    assert(ok() && "value() of an error StatusOr");
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

// Returns the error of a Status-returning expression from the enclosing function.
#define STRATA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::strata::Status strata_status_ = (expr);        \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

// STRATA_ASSIGN_OR_RETURN(auto x, ComputeX()); declares x or returns the error.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(strata_statusor_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
