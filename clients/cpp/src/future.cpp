// The reader-thread marker behind Future::Get's deadlock check.
#include "turnloom/future.hpp"

#include <string>

namespace turnloom::detail {

namespace {
thread_local const void* t_reader_of = nullptr;
}

const void* CurrentReaderOf() noexcept { return t_reader_of; }
void SetCurrentReaderOf(const void* client) noexcept { t_reader_of = client; }

Error BlockingCallError(const char* what) {
  return Error(ErrorCode::BlockingCallInCallback,
               std::string(what) +
                   " would block the client's reader thread (this is a callback): the answer "
                   "can only be read by this thread, so it would deadlock. Use the *Async form "
                   "and Future::Then, or hand the work to another thread");
}

Error TimeoutError(const char* what, std::chrono::milliseconds limit) {
  return Error(ErrorCode::Timeout, std::string(what) + ": no answer within " +
                                       std::to_string(limit.count()) +
                                       " ms (the request may still be executed by the server)");
}

}  // namespace turnloom::detail
