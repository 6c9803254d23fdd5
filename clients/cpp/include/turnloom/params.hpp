// Node params, field for field as docs/protocol.md section 7 lists them, with the same
// defaults. "structural" fields are fixed when the agent is created; the others can be
// changed while the agent is idle or paused (Agent::ChangeParams).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "turnloom/error.hpp"
#include "turnloom/value.hpp"

namespace turnloom {

enum class Placement {
  InPlaceOfUser,
  BeforeUserAsUser,
  BeforeUserAsSystem,
  AfterUserAsUser,
  AfterUserAsSystem,
};
enum class Selection { First, Random, Cycle };
enum class ToolCallDisposition {
  RouteOnly,
  Acknowledge,
  Notify,
  NotifyAndAcknowledge,
  Pause,
  PauseAndAcknowledge,
  AwaitResult,
};
enum class ToolCallMode { DetectOnly, CallOrAnswer };

// The wire names ("in_place_of_user", ...).
const char* ToString(Placement v) noexcept;
const char* ToString(Selection v) noexcept;
const char* ToString(ToolCallDisposition v) noexcept;
const char* ToString(ToolCallMode v) noexcept;

struct SamplingParams {
  double temperature = 0.7;     // 0..5; 0 = greedy
  double top_p = 0.95;          // 0..1; 1 = off
  std::int64_t top_k = 40;      // 0..1000000; 0 = off
  double min_p = 0.05;          // 0..1; 0 = off
  double repeat_penalty = 1.1;  // 0..10; 1 = off
  std::int64_t max_tokens = 256;  // 1..32768
  std::int64_t seed = -1;         // -1 = random; <= 4294967294
  std::int64_t timeout_ms = 0;    // time budget of one generation; 0 = none
};

struct ToolParamDefinition {
  std::string name;
  std::string type = "string";  // string, boolean, integer, number, array, object
  std::string description;
  std::vector<std::string> enum_values;  // "enum": a string's only values (empty: any)
};

struct ToolDefinition {
  std::string name;
  std::string description;
  std::vector<ToolParamDefinition> parameters;
};

// A checkpoint: the turn always pauses right after it exits.
struct PauseParams {
  std::int64_t pause_timeout_ms = 0;  // structural; 0 = wait forever
  std::string default_exit;           // structural
  std::string timeout_exit;           // structural; "" = end the turn pause_timed_out
};

struct GenerateParams {
  std::string system_prompt;
  std::string template_ = "{{human_message}}";  // `template` on the wire
  Placement placement = Placement::InPlaceOfUser;
  bool stream = true;
  std::string model_name;  // structural; "" = the graph's default model
  SamplingParams sampling;
  std::string default_exit;  // structural
};

struct CannedResponseParams {
  std::vector<std::string> lines;  // 1..1024 lines
  Selection selection = Selection::First;
  std::string default_exit;  // structural
};

struct ToolCallParams {
  std::vector<ToolDefinition> tools;                                    // structural; 1..128
  ToolCallDisposition disposition = ToolCallDisposition::Acknowledge;  // structural
  ToolCallMode mode = ToolCallMode::CallOrAnswer;
  std::string system_prompt;
  std::string acknowledge_text;  // "" = "ok"
  std::string model_name;        // structural
  SamplingParams sampling;
  std::int64_t pause_timeout_ms = 0;  // structural
  std::string tool_called_exit;       // structural
  std::string no_tool_called_exit;    // structural
  std::string timeout_exit;           // structural
};

using NodeParams = std::variant<PauseParams, GenerateParams, CannedResponseParams, ToolCallParams>;

// "Pause", "Generate", "CannedResponse", "ToolCall".
const char* NodeTypeName(const NodeParams& params) noexcept;

// Params <-> the protocol's params map (every field written; unknown fields ignored when read,
// as the protocol asks of clients).
Value ToValue(const NodeParams& params);
Result<NodeParams> NodeParamsFromValue(std::string_view node_type, const Value& params);

}  // namespace turnloom
