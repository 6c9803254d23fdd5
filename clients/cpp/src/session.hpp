// Session: the client's end of one connection (docs/protocol.md sections 1, 2 and 9).
//
// One reader thread runs asio's io_context: it reads frames, matches replies to requests by
// request_id and routes events to agents by agent_id; it also does every socket write. A
// reply is handed to its request's handler before the next frame is read, so a handler can
// start waiting for the events that follow the reply (a step) without missing one. asio
// stays inside session.cpp (pimpl).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "turnloom/client.hpp"
#include "turnloom/error.hpp"
#include "turnloom/value.hpp"

namespace turnloom::detail {

class AgentCore;

// Gets a request's reply frame, or the Error it met (an ErrorResponse, 1002, 5003 ...).
using ReplyHandler = std::function<void(Result<Value>)>;

class Session : public std::enable_shared_from_this<Session> {
 public:
  static Result<std::shared_ptr<Session>> Open(const ClientOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Sends `message` with a fresh request_id. `done` runs once: on the reader thread with the
  // reply, or at once on this thread when the request cannot be sent (closed: 1002/2001;
  // over max_frame_bytes: 5003, nothing sent).
  void Request(Value message, ReplyHandler done);

  // Routes the events of `id` to `agent`; returns the agent it replaced there (a LoadSlot in
  // place of one), or nullptr.
  std::shared_ptr<AgentCore> AddAgent(std::int64_t id, std::shared_ptr<AgentCore> agent);
  void RemoveAgent(std::int64_t id);
  std::vector<std::shared_ptr<AgentCore>> Agents();

  Result<void> Close(std::chrono::milliseconds timeout);
  void SetOnConnectionLost(std::function<void(const Error&)> callback);

  bool connected() const noexcept;
  std::int64_t session_id() const noexcept;
  // `timeout`, with kUseDefault replaced by the client's call_timeout.
  std::chrono::milliseconds Limit(std::chrono::milliseconds timeout) const noexcept;
  // True on this session's reader thread: a blocking call there would deadlock.
  bool OnReaderThread() const noexcept;

 private:
  struct Impl;
  explicit Session(const ClientOptions& options);
  Result<void> Handshake(const ClientOptions& options);
  void StartThread();
  void StartRead();
  void ReadBody(std::uint32_t size);
  void SkipBody(std::uint32_t remaining);
  void Dispatch(Value frame);
  void Notice(const Value& frame);
  void Write();
  void Lost(const std::string& why);
  void Stop();

  std::unique_ptr<Impl> impl_;
};

}  // namespace turnloom::detail
