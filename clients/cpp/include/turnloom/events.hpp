// What the server reports: tool calls, pauses, completions, and the Step a SendMessage or a
// Resume returns (the turn's next pause or its completion, docs/protocol.md section 5).
// Every string is owned: safe to keep beyond a callback.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "turnloom/value.hpp"

namespace turnloom {

struct ToolCallEvent {
  std::string call_id;         // "c%08x", unique for the agent's lifetime
  std::string tool_name;
  std::string arguments_json;  // a JSON object whose values are all strings
  std::string disposition;     // "await_result", ...
  std::string node_name;       // the ToolCall node that detected it
  Value arguments;             // the arguments coerced to the tool's declared types
};

struct PauseInfo {
  std::int64_t turn_id = 0;
  std::string node_name;       // the node that exited
  std::string pending_exit;    // the exit a plain Resume() takes ("default", "tool_called", ...)
  std::string pending_target;  // the node it leads to; "" = end
  std::int64_t timeout_ms = 0;  // 0 = no deadline
  std::vector<ToolCallEvent> pending_calls;
  bool awaits_results = false;  // a resume must carry one result per pending call
};

struct TurnResult {
  std::int64_t turn_id = 0;
  std::string status;  // "success", "error", "cancelled", "pause_timed_out"
  std::string text;    // the whole reply
  std::int64_t tokens_generated = 0;
  std::optional<int> error_code;  // 4001/4002/4003 when status is "error"
  std::string error_message;
  double paused_duration_s = 0.0;
  std::int64_t pause_count = 0;
  Value debug_info;  // nil unless the agent was created with enable_diagnostics
};

// The answer of SendMessage / Resume: exactly one of `pause` and `result` is set (both unset
// only for Wait() on an agent that never ran a turn).
struct Step {
  std::optional<PauseInfo> pause;
  std::optional<TurnResult> result;
  bool paused() const noexcept { return pause.has_value(); }
  bool complete() const noexcept { return result.has_value(); }
};

// What SendMessage does while the agent's turn is open (running, or paused waiting for the
// game); on an idle agent every policy simply starts a turn (docs/reference/turns.md, "Input
// policies").
enum class InputPolicy {
  Reject,     // refused with 3004 AgentBusy; nothing changes (the default)
  Enqueue,    // waits (at most 8), starts the next turn when this one ends; its SendMessage
              // answers at the first pause or completion of its own turn
  Interrupt,  // the open turn ends cancelled, the message starts a new turn at once
  Merge,      // as Interrupt, the new turn's message being both, joined by a newline
};
const char* InputPolicyName(InputPolicy policy) noexcept;  // "reject", "enqueue", ...

// A message's fate, once decided (NodeEvent "message"; sent only for agents whose policy is not
// Reject).
struct MessageEvent {
  std::string text;  // the message (for "merged": both, joined by a newline)
  std::string fate;  // "started", "queued", "interrupted", "merged", "dropped"
  std::optional<std::int64_t> turn_id;           // the turn it started; unset while queued,
                                                 // dropped
  std::optional<std::int64_t> replaced_turn_id;  // the turn an interrupt or merge cancelled
  std::int64_t queued = 0;                       // messages waiting now (a queued one counts itself)
};

// One result of an AwaitResult pause: `result` is the text the model sees.
struct ToolResult {
  std::string call_id;
  std::string result;
};

// One save slot in the server's store (docs/reference/durability.md, "Save slots").
struct SlotInfo {
  std::string slot;            // its name (1 to 128 characters)
  std::int64_t agent_id = 0;   // the agent that was saved into it
  double saved_at = 0.0;       // when, in absolute seconds (Unix time)
  std::int64_t size = 0;       // the snapshot's bytes
};

struct ModelInfo {
  std::string name;
  bool renders_tools = false;
  std::string tool_support_error;
  std::string tool_call_family;
  std::optional<std::int64_t> context_size;
};

}  // namespace turnloom
