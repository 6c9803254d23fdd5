// Optional, for applications built with exceptions: OrThrow(agent.Resume()) returns the value
// or throws turnloom::Exception carrying the Error. The library itself never throws.
#pragma once

#if defined(__cpp_exceptions)
#include <stdexcept>
#include <utility>

#include "turnloom/error.hpp"

namespace turnloom {

class Exception : public std::runtime_error {
 public:
  explicit Exception(Error error) : std::runtime_error(error.ToString()), error_(std::move(error)) {}
  const Error& error() const noexcept { return error_; }
  int code() const noexcept { return error_.code; }

 private:
  Error error_;
};

template <class T>
T OrThrow(Result<T> result) {
  if (!result.ok()) throw Exception(result.error());
  return std::move(result).value();
}

inline void OrThrow(Result<void> result) {
  if (!result.ok()) throw Exception(result.error());
}

}  // namespace turnloom
#endif
