// Errors are values: every call returns a Result<T> holding either its value or an Error with
// the protocol's code (docs/protocol.md section 6) and the server's message. Nothing here
// throws, so the library works in builds without exceptions (Unreal).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace turnloom {

enum class ErrorCode : int {
  Ok = 0,
  // Client side (docs/protocol.md section 6).
  ConnectionFailed = 1001,
  ConnectionDropped = 1002,
  Timeout = 1003,
  // Client side, this library's usage errors (reserved range 1004-1099 in the protocol doc).
  BlockingCallInCallback = 1004,  // a blocking call on the reader thread: it would deadlock
  NoPausedToolBatch = 1005,       // RetryPausedToolBatch with no kept batch
  // Server.
  ServerShuttingDown = 2001,
  SessionNotReady = 2002,
  SessionLimitExceeded = 2003,
  Unauthorized = 2004,  // the server requires an auth key (ClientOptions::auth_key)
  InvalidAgentId = 3001,
  AgentAlreadyDestroyed = 3002,
  GraphCompilationFailed = 3003,
  AgentBusy = 3004,
  UnknownNode = 3005,
  ParamNotMutable = 3006,
  InvalidParamValue = 3007,
  InvalidExitTarget = 3008,
  AgentNotPaused = 3012,
  InvalidToolResults = 3016,
  InferenceFailed = 4001,
  InferenceTimeout = 4002,
  MaxStepsExceeded = 4003,
  MalformedMessage = 5001,
  UnknownMessageType = 5002,
  FrameTooLarge = 5003,
  ProtocolVersionMismatch = 5004,
};

// "AgentBusy" for 3004; "Unknown" for a code this client does not know.
const char* ErrorCodeName(int code) noexcept;

struct Error {
  // An int, not an ErrorCode: a newer server's codes must survive the trip unchanged.
  int code = 0;
  std::string message;

  Error() = default;
  Error(ErrorCode c, std::string m) : code(static_cast<int>(c)), message(std::move(m)) {}
  Error(int c, std::string m) : code(c), message(std::move(m)) {}

  bool Is(ErrorCode c) const noexcept { return code == static_cast<int>(c); }
  // "3004 AgentBusy: agent 1: send_message refused: ..."
  std::string ToString() const;
};

namespace detail {
// Using the value of a failed Result is a programming error; without exceptions the only
// honest answer is to stop, saying why.
[[noreturn]] void AbortOnBadAccess(const Error& error) noexcept;
}  // namespace detail

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Error error) : error_(std::move(error)) {
    if (error_.code == 0) error_.code = static_cast<int>(ErrorCode::MalformedMessage);
  }

  bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const Error& error() const noexcept { return error_; }

  const T& value() const& { Check(); return *value_; }
  T& value() & { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  const T* operator->() const { Check(); return &*value_; }
  T* operator->() { Check(); return &*value_; }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }

 private:
  void Check() const {
    if (!value_) detail::AbortOnBadAccess(error_);
  }
  std::optional<T> value_;
  Error error_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT

  bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }
  const Error& error() const noexcept { return error_; }
  void value() const {
    if (failed_) detail::AbortOnBadAccess(error_);
  }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace turnloom
