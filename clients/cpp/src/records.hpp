// The typed records of server frames (docs/protocol.md section 4) and of tool results.
#pragma once

#include <string_view>
#include <vector>

#include "turnloom/events.hpp"
#include "turnloom/value.hpp"

namespace turnloom::detail {

ToolCallEvent ToolCallFromWire(const Value& frame);
PauseInfo PauseFromWire(const Value& frame);  // a NodeEvent paused, or GetAgentState's `pause`
TurnResult ResultFromWire(const Value& frame);
ModelInfo ModelInfoFromWire(const Value& item);
MessageEvent MessageFromWire(const Value& frame);  // a NodeEvent message
SlotInfo SlotFromWire(const Value& item);          // an Ack of SaveSlot, or a ListSlots item
// The policy a reply names ("enqueue" ...); Reject for a name this client does not know.
InputPolicy InputPolicyFromName(std::string_view name) noexcept;
Value ToolResultsToWire(const std::vector<ToolResult>& results);

}  // namespace turnloom::detail
