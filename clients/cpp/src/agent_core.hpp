// AgentCore: one agent's client-side state — its step waiters, callbacks, registered tools and
// kept tool batch — and its requests. Events arrive on the reader thread (OnEvent); requests
// are made from any thread. Callbacks are called without any lock held, so they may call
// back into the client.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "session.hpp"
#include "turnloom/agent.hpp"
#include "turnloom/future.hpp"

namespace turnloom::detail {

class AgentCore : public std::enable_shared_from_this<AgentCore> {
 public:
  AgentCore(std::shared_ptr<Session> session, std::int64_t id, InputPolicy input_policy);

  std::int64_t id() const noexcept { return id_; }
  Session& session() noexcept { return *session_; }

  // --- frames (reader thread) ---
  void OnEvent(const Value& frame);
  // The answers this agent's waiters wait for will not come.
  void Fail(const Error& error);
  // A LoadSlot put another agent in this one's place (same id): the server destroyed this one,
  // so its later calls are 3002 and waits still open fail with 3002.
  void Replaced(const std::string& slot);

  // --- requests ---
  Future<Step> SendMessageAsync(std::string_view text);
  Future<Step> ResumeAsync(std::string_view resume_node, std::vector<ToolResult> results);
  Future<void> ChangeParamsAsync(std::string_view node_name, Value params, const char* node_type);
  Future<NodeParams> GetParamsAsync(std::string_view node_name);
  Future<bool> CancelAsync();
  Future<void> DestroyAsync();
  Future<Step> WaitAsync();
  Future<std::optional<TurnResult>> WaitCompleteAsync();
  Future<Step> RetryPausedToolBatchAsync();
  Future<void> SetInputPolicyAsync(InputPolicy policy);
  Future<SlotInfo> SaveAsync(std::string_view slot);
  InputPolicy input_policy() const;

  // --- host side ---
  struct Callbacks {
    PausedCallback paused;
    ResumedCallback resumed;
    ToolCallWithIdCallback tool_call_with_id;
    ToolCallEventCallback tool_call_event;
    AnswerTextCallback answer_text;
    TurnCompleteCallback turn_complete;
    MessageCallback message;
    AgentErrorCallback error;
  };
  // Changes the callbacks under the lock (`edit(callbacks)`).
  void EditCallbacks(const std::function<void(Callbacks&)>& edit);
  void RegisterTool(std::string name, ToolHandler handler);
  bool HasPausedToolBatch() const;
  std::optional<TurnResult> LastResult() const;

 private:
  // Sends a request answered by its step: the waiter is registered while the Ack is handled
  // on the reader thread, before any later frame is read (docs/protocol.md section 5).
  Future<Step> StepRequest(const char* operation, Value message,
                           std::function<void()> on_accepted = nullptr);
  template <class T>
  Future<T> Call(const char* operation, Value message,
                 std::function<Result<T>(const Value&)> on_reply);
  std::optional<Error> Refusal(const char* operation) const;
  void Paused(PauseInfo info);
  void Completed(TurnResult result);
  void SettleSteps(const Step& step);
  void OnMessage(MessageEvent event);

  const std::shared_ptr<Session> session_;
  const std::int64_t id_;

  mutable std::mutex mutex_;  // guards everything below
  Callbacks callbacks_;
  std::map<std::string, ToolHandler, std::less<>> tools_;
  std::vector<Promise<Step>> steps_;
  // Callers of queued messages (Enqueue), oldest first, in the server's queue order: each
  // joins steps_ when the server says its turn started.
  std::vector<Promise<Step>> queued_;
  std::vector<Promise<std::optional<TurnResult>>> completions_;
  std::optional<PauseInfo> pause_;
  std::uint64_t pause_serial_ = 0;  // tells a later pause from the one an auto-resume answered
  std::optional<std::vector<ToolResult>> kept_batch_;
  std::uint64_t batch_serial_ = 0;
  std::optional<TurnResult> last_result_;
  bool destroyed_ = false;
  InputPolicy input_policy_;  // as this client last set it or heard it
};

}  // namespace turnloom::detail
