// Status: the error channel of every fallible call in Strata.
//
// An ok Status is a null pointer, so returning and testing success costs one
// compare on the hot path. An error carries a human-readable message that says
// what is wrong and where. No exception crosses a public API: user-facing failures
// travel as Status / StatusOr, internal invariants are asserts.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace strata {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return message_ == nullptr; }
  explicit operator bool() const { return ok(); }
  // The message of an error; empty for ok.
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }
  // Prepends context ("while loading functions[3]: ") to an error; no-op on ok.
  Status WithContext(const std::string& context) && {
    if (message_) *message_ = context + *message_;
    return std::move(*this);
  }

  Status(const Status& other)
      : message_(other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr) {}
  Status& operator=(const Status& other) {
    message_ = other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

 private:
  explicit Status(std::string message) : message_(std::make_unique<std::string>(std::move(message))) {}
  std::unique_ptr<std::string> message_;
};

// Builds an error message with stream syntax: return ErrorStatus() << "bad " << x;
class ErrorStatus {
 public:
  template <typename T>
  ErrorStatus& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  operator Status() const { return Status::Error(stream_.str()); }  // NOLINT

 private:
  std::ostringstream stream_;
};

// A value or the error that prevented computing it.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT
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
#define STRATA_RETURN_IF_ERROR(expr)                        \
  do {                                                      \
    ::strata::Status strata_status_ = (expr);               \
    if (!strata_status_.ok()) return strata_status_;        \
  } while (0)

// STRATA_ASSIGN_OR_RETURN(auto x, ComputeX()); declares x or returns the error.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(strata_statusor_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
