// Server frames -> records. Missing or mistyped fields read as their zero value: a client must
// tolerate what a newer server adds or changes (docs/protocol.md section 1).
#include "records.hpp"

namespace turnloom::detail {

ToolCallEvent ToolCallFromWire(const Value& frame) {
  ToolCallEvent e;
  e.call_id = frame.GetString("call_id");
  e.tool_name = frame.GetString("tool_name");
  e.arguments_json = frame.GetString("arguments_json");
  e.disposition = frame.GetString("disposition");
  e.node_name = frame.GetString("node_name");
  if (const Value* args = frame.Find("arguments")) e.arguments = *args;
  return e;
}

PauseInfo PauseFromWire(const Value& frame) {
  PauseInfo p;
  p.turn_id = frame.GetInt("turn_id");
  p.node_name = frame.GetString("node_name");
  p.pending_exit = frame.GetString("pending_exit");
  p.pending_target = frame.GetString("pending_target");
  p.timeout_ms = frame.GetInt("timeout_ms");
  p.awaits_results = frame.GetBool("awaits_results");
  const Value* calls = frame.Find("pending_calls");
  if (calls != nullptr && calls->IsArray()) {
    for (const Value& call : *calls->AsArray()) p.pending_calls.push_back(ToolCallFromWire(call));
  }
  return p;
}

TurnResult ResultFromWire(const Value& frame) {
  TurnResult r;
  r.turn_id = frame.GetInt("turn_id");
  r.status = frame.GetString("status");
  r.text = frame.GetString("text");
  r.tokens_generated = frame.GetInt("tokens_generated");
  if (const Value* code = frame.Find("error_code"); code != nullptr && code->AsInt()) {
    r.error_code = static_cast<int>(*code->AsInt());
  }
  r.error_message = frame.GetString("error_message");
  r.paused_duration_s = frame.GetDouble("paused_duration_s");
  r.pause_count = frame.GetInt("pause_count");
  if (const Value* debug = frame.Find("debug_info")) r.debug_info = *debug;
  return r;
}

MessageEvent MessageFromWire(const Value& frame) {
  MessageEvent m;
  m.text = frame.GetString("text");
  m.fate = frame.GetString("fate");
  if (const Value* turn = frame.Find("turn_id"); turn != nullptr && turn->AsInt()) {
    m.turn_id = *turn->AsInt();
  }
  if (const Value* replaced = frame.Find("replaced_turn_id");
      replaced != nullptr && replaced->AsInt()) {
    m.replaced_turn_id = *replaced->AsInt();
  }
  m.queued = frame.GetInt("queued");
  return m;
}

SlotInfo SlotFromWire(const Value& item) {
  SlotInfo s;
  s.slot = item.GetString("slot");
  s.agent_id = item.GetInt("agent_id");
  s.saved_at = item.GetDouble("saved_at");
  s.size = item.GetInt("size");
  return s;
}

InputPolicy InputPolicyFromName(std::string_view name) noexcept {
  if (name == "enqueue") return InputPolicy::Enqueue;
  if (name == "interrupt") return InputPolicy::Interrupt;
  if (name == "merge") return InputPolicy::Merge;
  return InputPolicy::Reject;
}

ModelInfo ModelInfoFromWire(const Value& item) {
  ModelInfo m;
  m.name = item.GetString("name");
  m.renders_tools = item.GetBool("renders_tools");
  m.tool_support_error = item.GetString("tool_support_error");
  m.tool_call_family = item.GetString("tool_call_family");
  if (const Value* size = item.Find("context_size"); size != nullptr && size->AsInt()) {
    m.context_size = *size->AsInt();
  }
  return m;
}

Value ToolResultsToWire(const std::vector<ToolResult>& results) {
  Value out = Value::MakeArray();
  for (const ToolResult& r : results) {
    out.Push(Value::MakeMap().Set("call_id", r.call_id).Set("result", r.result));
  }
  return out;
}

}  // namespace turnloom::detail

namespace turnloom {

const char* InputPolicyName(InputPolicy policy) noexcept {
  switch (policy) {
    case InputPolicy::Enqueue: return "enqueue";
    case InputPolicy::Interrupt: return "interrupt";
    case InputPolicy::Merge: return "merge";
    case InputPolicy::Reject: break;
  }
  return "reject";
}

}  // namespace turnloom
