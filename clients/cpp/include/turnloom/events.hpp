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

// One result of an AwaitResult pause: `result` is the text the model sees.
struct ToolResult {
  std::string call_id;
  std::string result;
};

struct ModelInfo {
  std::string name;
  bool renders_tools = false;
  std::string tool_support_error;
  std::string tool_call_family;
  std::optional<std::int64_t> context_size;
};

}  // namespace turnloom
