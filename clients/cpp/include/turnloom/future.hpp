// Future<T>: the answer of an *Async call, to wait for (Get) or to be called back with (Then).
//
// Why not std::future: a blocking Get() made on the client's reader thread (inside a callback)
// would wait for a reply only that same thread can read — a deadlock. This Future knows which
// client completes it and answers such a Get() at once with 1004 BlockingCallInCallback.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "turnloom/error.hpp"

namespace turnloom {

// Per-call time limits. kWaitForever: no limit. kUseDefault: the client's call_timeout.
inline constexpr std::chrono::milliseconds kWaitForever = std::chrono::milliseconds::max();
inline constexpr std::chrono::milliseconds kUseDefault{-1};

namespace detail {

// The client whose reader thread the calling thread is (nullptr on any other thread).
const void* CurrentReaderOf() noexcept;
void SetCurrentReaderOf(const void* client) noexcept;
Error BlockingCallError(const char* what);
Error TimeoutError(const char* what, std::chrono::milliseconds limit);

template <class T>
struct FutureState {
  explicit FutureState(const void* owner) : owner(owner) {}
  std::mutex mutex;
  std::condition_variable ready;
  std::optional<Result<T>> result;
  std::function<void(Result<T>)> then;
  const void* owner;  // the client (session) whose reader thread completes this future
};

}  // namespace detail

template <class T>
class Future {
 public:
  Future() = default;
  explicit Future(std::shared_ptr<detail::FutureState<T>> state) : state_(std::move(state)) {}

  bool Valid() const noexcept { return state_ != nullptr; }

  bool Ready() const {
    if (!state_) return true;
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->result.has_value();
  }

  // Waits for the answer, at most `timeout` (1003 Timeout; the request itself goes on).
  // On the reader thread a Get() that would have to wait fails at once with 1004.
  Result<T> Get(std::chrono::milliseconds timeout = kWaitForever) const {
    if (!state_) return Error(ErrorCode::ConnectionDropped, "an empty Future has no answer");
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (!state_->result) {
      if (state_->owner != nullptr && detail::CurrentReaderOf() == state_->owner) {
        return detail::BlockingCallError("Future::Get");
      }
      auto done = [this] { return state_->result.has_value(); };
      if (timeout == kWaitForever || timeout < std::chrono::milliseconds::zero()) {
        state_->ready.wait(lock, done);
      } else if (!state_->ready.wait_for(lock, timeout, done)) {
        return detail::TimeoutError("Future::Get", timeout);
      }
    }
    return *state_->result;
  }

  // Calls `callback(result)` once: at once on this thread if the answer is in, else on the
  // thread that completes it (the client's reader thread). One callback per future.
  void Then(std::function<void(Result<T>)> callback) const {
    if (!state_ || !callback) return;
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (!state_->result) {
      state_->then = std::move(callback);
      return;
    }
    Result<T> copy = *state_->result;
    lock.unlock();
    callback(std::move(copy));
  }

 private:
  std::shared_ptr<detail::FutureState<T>> state_;
};

// The producing side, used by the library (and handy for tests).
template <class T>
class Promise {
 public:
  explicit Promise(const void* owner = nullptr)
      : state_(std::make_shared<detail::FutureState<T>>(owner)) {}

  Future<T> GetFuture() const { return Future<T>(state_); }

  // The first Set wins; later ones are ignored (a late reply after a connection loss, say).
  void Set(Result<T> result) const {
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (state_->result) return;
    state_->result = std::move(result);
    std::function<void(Result<T>)> then = std::move(state_->then);
    state_->then = nullptr;
    std::optional<Result<T>> copy;
    if (then) copy = *state_->result;
    lock.unlock();
    state_->ready.notify_all();
    if (then) then(std::move(*copy));
  }

 private:
  std::shared_ptr<detail::FutureState<T>> state_;
};

template <class T>
Future<T> ReadyFuture(Result<T> result) {
  Promise<T> promise;
  promise.Set(std::move(result));
  return promise.GetFuture();
}

}  // namespace turnloom
