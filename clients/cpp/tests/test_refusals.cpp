// Refused requests: exact codes, and a refused request changes nothing (the turn stays paused).
#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;

TEST(refusals_leave_turn_paused) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  auto step = agent->SendMessage("hello");
  CHECK_OK(step);
  CHECK(step->paused());

  auto still_paused = [&]() {
    auto now = agent->Wait();
    return now.ok() && now->paused() && now->pause->node_name == "gate";
  };

  CHECK_ERROR(agent->SendMessage("again"), ErrorCode::AgentBusy);              // 3004
  CHECK(still_paused());
  CHECK_ERROR(agent->Resume("no_such_node"), ErrorCode::UnknownNode);          // 3005
  CHECK(still_paused());
  PauseParams structural;  // default_exit is structural: changing it is 3006
  structural.default_exit = "slow";
  CHECK_ERROR(agent->ChangeParams("gate", structural), ErrorCode::ParamNotMutable);
  CHECK(still_paused());
  CHECK_ERROR(agent->ChangeParamFields("answer", Value::MakeMap().Set("stream", 1)),
              ErrorCode::InvalidParamValue);                                   // 3007
  CHECK_ERROR(agent->GetParams("no_such_node"), ErrorCode::UnknownNode);
  // A tool result on a plain pause: 3016, still paused.
  CHECK_ERROR(agent->ResumeWithToolResult({"c00000000", "{}"}), ErrorCode::InvalidToolResults);
  CHECK(still_paused());
  auto refused = agent->Resume("no_such_node");
  CHECK(!refused.ok());
  CHECK(refused.error().message.find("no_such_node") != std::string::npos);

  step = agent->Resume();
  CHECK_OK(step);
  CHECK_EQ(step->result->status, "success");
  CHECK_ERROR(agent->Resume(), ErrorCode::AgentNotPaused);                    // 3012

  CHECK_OK(agent->Destroy());
  CHECK_ERROR(agent->SendMessage("gone"), ErrorCode::AgentAlreadyDestroyed);  // 3002
}

TEST(await_result_batch_refusals) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(DoorGraph(ToolCallDisposition::AwaitResult));
  CHECK_OK(agent);
  auto step = agent->SendMessage(kOpenDoorCall);
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK(step->pause->awaits_results);
  CHECK_EQ(step->pause->pending_calls.size(), std::size_t{1});
  const std::string call_id = step->pause->pending_calls[0].call_id;

  CHECK_ERROR(agent->Resume(), ErrorCode::InvalidToolResults);  // no results: 3016
  CHECK_ERROR(agent->ResumeWithToolResult({"c_unknown", "x"}), ErrorCode::InvalidToolResults);
  CHECK_ERROR(agent->ResumeWithToolResults({{call_id, "x"}, {call_id, "y"}}),
              ErrorCode::InvalidToolResults);
  auto now = agent->Wait();
  CHECK_OK(now);
  CHECK(now->paused());
  step = agent->ResumeWithToolResult({call_id, "{\"ok\":true}"});
  CHECK_OK(step);
  CHECK_EQ(step->result->status, "success");
}

TEST(graph_errors) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  GraphDescription no_start = ShopGraph();
  no_start.SetStartNode("nowhere");
  CHECK_ERROR(client->CreateAgent(no_start), ErrorCode::GraphCompilationFailed);  // 3003
  PauseParams bad_exit;
  bad_exit.default_exit = "nowhere";
  GraphDescription dangling;
  dangling.AddPause("gate", bad_exit).SetStartNode("gate");
  CHECK_ERROR(client->CreateAgent(dangling), ErrorCode::InvalidExitTarget);  // 3008
  CannedResponseParams empty;  // at least one line
  GraphDescription no_lines;
  no_lines.AddCannedResponse("say", empty).SetStartNode("say");
  CHECK_ERROR(client->CreateAgent(no_lines), ErrorCode::InvalidParamValue);  // 3007
}
