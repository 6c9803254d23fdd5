// The typed records of server frames (docs/protocol.md section 4) and of tool results.
#pragma once

#include <vector>

#include "turnloom/events.hpp"
#include "turnloom/value.hpp"

namespace turnloom::detail {

ToolCallEvent ToolCallFromWire(const Value& frame);
PauseInfo PauseFromWire(const Value& frame);  // a NodeEvent paused, or GetAgentState's `pause`
TurnResult ResultFromWire(const Value& frame);
ModelInfo ModelInfoFromWire(const Value& item);
Value ToolResultsToWire(const std::vector<ToolResult>& results);

}  // namespace turnloom::detail
