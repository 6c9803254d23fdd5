// The graphs the scenarios drive, and small helpers.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "turnloom/turnloom.hpp"

namespace tltest {

using namespace turnloom;

// gate (Pause) -> answer (Generate, echoes "You said: <prompt>" on the mock model).
inline GraphDescription ShopGraph(std::int64_t pause_timeout_ms = 0, std::string timeout_exit = "") {
  PauseParams gate;
  gate.default_exit = "answer";
  gate.pause_timeout_ms = pause_timeout_ms;
  gate.timeout_exit = std::move(timeout_exit);
  GenerateParams answer;
  answer.system_prompt = "You are Mira, a shopkeeper.";
  CannedResponseParams slow;
  slow.lines = {"Too slow."};
  GraphDescription graph;
  graph.AddPause("gate", gate)
      .AddGenerate("answer", answer)
      .AddCannedResponse("slow", slow)
      .SetStartNode("gate")
      .SetDefaultModelName("mock");
  return graph;
}

// offer (Pause) -> confirm "Deal." by default, or a jump to decline "Maybe later.".
inline GraphDescription TradeGraph() {
  PauseParams offer;
  offer.default_exit = "confirm";
  CannedResponseParams confirm, decline;
  confirm.lines = {"Deal."};
  decline.lines = {"Maybe later."};
  GraphDescription graph;
  graph.AddPause("offer", offer)
      .AddCannedResponse("confirm", confirm)
      .AddCannedResponse("decline", decline)
      .SetStartNode("offer")
      .SetDefaultModelName("mock");
  return graph;
}

// detect (ToolCall declaring open_door(door_id), detect_only) -> answer (Generate). In
// call_or_answer mode detect would answer too when no tool is called: the server refuses that.
inline GraphDescription DoorGraph(ToolCallDisposition disposition) {
  ToolCallParams detect;
  detect.tools = {ToolDefinition{"open_door", "Open a door.", {{"door_id", "string", "Which door."}}}};
  detect.disposition = disposition;
  detect.mode = ToolCallMode::DetectOnly;
  detect.tool_called_exit = "answer";
  detect.no_tool_called_exit = "answer";
  GraphDescription graph;
  graph.AddToolCall("detect", detect)
      .AddGenerate("answer", GenerateParams{})
      .SetStartNode("detect")
      .SetDefaultModelName("mock");
  return graph;
}

// The mock model echoes the message, so this message is a call of open_door.
inline const char* kOpenDoorCall = R"({"name": "open_door", "arguments": {"door_id": "7"}})";

// Polls `done` until it holds or `limit` passes (for effects seen on the reader thread).
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace tltest
