// Agent: one agent on the server, as the Python client's Agent, with AgentProxy-style calls.
//
// Every call has a blocking form returning Result<T> and an *Async form returning Future<T>
// (wait with Get, or pass a completion callback to Then). Callbacks run on the client's reader
// thread: keep them short, and call only *Async forms from them — a blocking call made there
// fails at once with 1004 BlockingCallInCallback instead of deadlocking.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "turnloom/error.hpp"
#include "turnloom/events.hpp"
#include "turnloom/future.hpp"
#include "turnloom/params.hpp"

namespace turnloom {

namespace detail {
class AgentCore;
}

using PausedCallback = std::function<void(std::string_view node_name, std::string_view pending_exit)>;
using ResumedCallback = std::function<void(std::string_view node_name, std::string_view resume_node)>;
using ToolCallWithIdCallback = std::function<void(
    std::string_view call_id, std::string_view tool_name, std::string_view arguments_json)>;
using ToolCallEventCallback = std::function<void(const ToolCallEvent& event)>;
using AnswerTextCallback = std::function<void(std::string_view text, bool is_delta, bool is_final)>;
using TurnCompleteCallback = std::function<void(const TurnResult& result)>;
using MessageCallback = std::function<void(const MessageEvent& event)>;
// The agent's waits will not be answered: 1002 (connection lost), 2001/2003 (session ended),
// or an event the server could not send (5001/5003 notice naming this agent).
using AgentErrorCallback = std::function<void(const Error& error)>;
// A registered tool: gets the call, returns the result text (sent for AwaitResult only).
using ToolHandler = std::function<std::string(const ToolCallEvent& call)>;

using std::chrono::milliseconds;

class Agent {
 public:
  Agent() = default;  // an empty handle; every call on it fails with 3001
  explicit Agent(std::shared_ptr<detail::AgentCore> core);

  std::int64_t id() const noexcept;

  // Starts a turn; answers at its first pause or its completion. While a turn is open: 3004
  // under InputPolicy::Reject; under Enqueue it answers at the first pause or completion of the
  // message's own turn, after the open one ends (send it with SendMessageAsync from a thread
  // that also drives that turn).
  Result<Step> SendMessage(std::string_view text, milliseconds timeout = kUseDefault);
  Future<Step> SendMessageAsync(std::string_view text);

  // Resumes the paused turn: "" continues via the pending exit, a node name jumps there.
  Result<Step> Resume(std::string_view resume_node = "", milliseconds timeout = kUseDefault);
  Future<Step> ResumeAsync(std::string_view resume_node = "");

  // Resumes an AwaitResult pause with one result per pending call.
  Result<Step> ResumeWithToolResults(std::vector<ToolResult> results,
                                     milliseconds timeout = kUseDefault);
  Future<Step> ResumeWithToolResultsAsync(std::vector<ToolResult> results);
  Result<Step> ResumeWithToolResult(ToolResult result, milliseconds timeout = kUseDefault);
  Future<Step> ResumeWithToolResultAsync(ToolResult result);

  // Changes what a message does while a turn is open (legal idle or paused; 3004 while a turn
  // runs, 3007 for a value the server does not know). Messages already waiting keep their places.
  Result<void> SetInputPolicy(InputPolicy policy, milliseconds timeout = kUseDefault);
  Future<void> SetInputPolicyAsync(InputPolicy policy);
  // The policy as this client last set it (CreateAgent, SetInputPolicy) or heard it (Load, Fork).
  InputPolicy input_policy() const;

  // Writes the agent into the server store's save slot `slot`, replacing what it held, at rest:
  // idle, or paused (tool calls pending included). 3004 while a turn runs; 3007 when the server
  // has no store (--store) or for a bad name (1 to 128 characters). Client::Load and
  // Client::Fork bring it back (docs/reference/durability.md, "Save slots").
  Result<SlotInfo> Save(std::string_view slot, milliseconds timeout = kUseDefault);
  Future<SlotInfo> SaveAsync(std::string_view slot);

  // Replaces a node's params (every field: take them from GetParams, change the mutable ones).
  Result<void> ChangeParams(std::string_view node_name, NodeParams params,
                            milliseconds timeout = kUseDefault);
  Future<void> ChangeParamsAsync(std::string_view node_name, NodeParams params);
  // Changes only the fields `fields` (a map) names; a nested `sampling` map likewise.
  Result<void> ChangeParamFields(std::string_view node_name, Value fields,
                                 milliseconds timeout = kUseDefault);
  Future<void> ChangeParamFieldsAsync(std::string_view node_name, Value fields);

  // A node's current params (the baseline to change).
  Result<NodeParams> GetParams(std::string_view node_name, milliseconds timeout = kUseDefault);
  Future<NodeParams> GetParamsAsync(std::string_view node_name);

  // Ends the open turn `cancelled`; false when there was none.
  Result<bool> Cancel(milliseconds timeout = kUseDefault);
  Future<bool> CancelAsync();

  // Cancels any open turn and destroys the agent; later calls are 3002.
  Result<void> Destroy(milliseconds timeout = kUseDefault);
  Future<void> DestroyAsync();

  // The current step: at once if paused or idle (the last completion), else the next one.
  Result<Step> Wait(milliseconds timeout = kUseDefault);
  Future<Step> WaitAsync();
  // The end of the open turn, through any pauses (nullopt: no turn ever ran).
  Result<std::optional<TurnResult>> WaitComplete(milliseconds timeout = kUseDefault);
  Future<std::optional<TurnResult>> WaitCompleteAsync();

  // Callbacks (reader thread). Setting one replaces the previous; nullptr removes it.
  void SetOnPaused(PausedCallback callback);
  void SetOnResumed(ResumedCallback callback);
  void SetOnToolCallWithId(ToolCallWithIdCallback callback);
  void SetOnToolCallEvent(ToolCallEventCallback callback);
  void SetOnAnswerText(AnswerTextCallback callback);
  void SetOnTurnComplete(TurnCompleteCallback callback);
  void SetOnMessage(MessageCallback callback);  // every message's fate (not under Reject)
  void SetOnError(AgentErrorCallback callback);

  // Runs `handler` when a pausing ToolCall pauses and every pending call has a handler, then
  // resumes the turn (with the handlers' results for AwaitResult; with none for Pause and
  // PauseAndAcknowledge). A caller waiting on the step waits on through that resume. If the
  // server refuses it, the batch is kept (HasPausedToolBatch) and the waiter gets the pause.
  // nullptr unregisters. Handlers run on the reader thread.
  void RegisterTool(std::string name, ToolHandler handler);
  bool HasPausedToolBatch() const;
  // Resumes again with the kept batch (1005 NoPausedToolBatch when there is none).
  Result<Step> RetryPausedToolBatch(milliseconds timeout = kUseDefault);
  Future<Step> RetryPausedToolBatchAsync();

  // The completion of the agent's last finished turn, as last reported.
  std::optional<TurnResult> LastResult() const;

 private:
  std::shared_ptr<detail::AgentCore> core_;
};

}  // namespace turnloom
