// The cross-client story (tests/test_csharp_client.py runs it beside the Python and C# ones
// against one server and compares the transcripts): a tool call answered by the game, a
// pause, a param changed while paused, a jump resume and a pause that times out.
//   turnloom_example_story PORT
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <turnloom/turnloom.hpp>

namespace {
std::mutex print_mutex;  // callbacks print from the reader thread

void Line(const std::string& line) {
  std::lock_guard<std::mutex> lock(print_mutex);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void Print(const turnloom::Step& step) {
  if (step.paused()) {
    const auto& p = *step.pause;
    std::string calls;
    for (const auto& call : p.pending_calls) {
      calls += (calls.empty() ? "" : "; ") + call.tool_name + " " + call.arguments_json;
    }
    Line("pause " + p.node_name + " " + p.pending_exit + " -> '" + p.pending_target + "' calls=[" +
         calls + "]");
  } else {
    Line("complete " + step.result->status + " " + step.result->text);
  }
}

int Fail(const turnloom::Error& error) {
  std::fprintf(stderr, "%s\n", error.ToString().c_str());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s PORT\n", argv[0]), 2;
  turnloom::ClientOptions options;
  options.port = static_cast<std::uint16_t>(std::atoi(argv[1]));
  options.client_name = "story-cpp";
  auto client = turnloom::Client::Connect(options);
  if (!client) return Fail(client.error());

  turnloom::ToolCallParams detect;
  detect.tools = {turnloom::ToolDefinition{
      "check_stock", "How many of an item the shop has.", {{"item", "string", "The item."}}}};
  detect.disposition = turnloom::ToolCallDisposition::AwaitResult;
  detect.mode = turnloom::ToolCallMode::DetectOnly;
  detect.tool_called_exit = "gate";
  detect.no_tool_called_exit = "gate";
  turnloom::PauseParams gate;
  gate.default_exit = "answer";
  turnloom::GenerateParams answer;
  answer.system_prompt = "You are Mira, a shopkeeper.";
  turnloom::CannedResponseParams decline;
  decline.lines = {"Maybe later."};
  turnloom::GraphDescription shop_graph;
  shop_graph.AddToolCall("detect", detect)
      .AddPause("gate", gate)
      .AddGenerate("answer", answer)
      .AddCannedResponse("decline", decline)
      .SetStartNode("detect")
      .SetDefaultModelName("mock");
  turnloom::PauseParams guard_pause;
  guard_pause.pause_timeout_ms = 200;
  guard_pause.timeout_exit = "slow";
  turnloom::CannedResponseParams slow;
  slow.lines = {"Too slow."};
  turnloom::GraphDescription guard_graph;
  guard_graph.AddPause("guard", guard_pause)
      .AddCannedResponse("slow", slow)
      .SetStartNode("guard")
      .SetDefaultModelName("mock");
  auto shop = client->CreateAgent(shop_graph);
  if (!shop) return Fail(shop.error());
  auto guard = client->CreateAgent(guard_graph);
  if (!guard) return Fail(guard.error());
  auto resumed = [](std::string_view node, std::string_view to) {
    Line("resumed " + std::string(node) + " '" + std::string(to) + "'");
  };
  shop->SetOnResumed(resumed);
  guard->SetOnResumed(resumed);

  auto step = shop->SendMessage(R"({"name": "check_stock", "arguments": {"item": "sword"}})");
  if (!step) return Fail(step.error());
  Print(*step);
  const auto call = step->pause->pending_calls.at(0);
  Line("game: " + call.tool_name + " -> 3 in stock");
  step = shop->ResumeWithToolResult({call.call_id, "3 in stock"});
  if (!step) return Fail(step.error());
  Print(*step);
  auto baseline = shop->GetParams("answer");
  if (!baseline) return Fail(baseline.error());
  auto changed = std::get<turnloom::GenerateParams>(*baseline);
  changed.template_ = "(a trusted customer) {{human_message}}";
  if (auto done = shop->ChangeParams("answer", changed); !done) return Fail(done.error());
  Line("game: answer.template = " + changed.template_);
  step = shop->Resume();
  if (!step) return Fail(step.error());
  Print(*step);

  step = shop->SendMessage("Can I have a discount?");
  if (!step) return Fail(step.error());
  Print(*step);
  Line("game: jump to decline");
  step = shop->Resume("decline");
  if (!step) return Fail(step.error());
  Print(*step);

  step = guard->SendMessage("Wake up.");
  if (!step) return Fail(step.error());
  Print(*step);
  Line("game: waits");
  auto done = guard->WaitComplete();
  if (!done || !done->has_value()) return std::fprintf(stderr, "the guard's turn did not end\n"), 1;
  Line("complete " + (*done)->status + " " + (*done)->text);
  if (auto closed = client->Close(); !closed) return Fail(closed.error());
  return 0;
}
