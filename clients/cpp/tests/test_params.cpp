// Graph and params as data: every node type and field makes the round trip unchanged.
#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;

TEST(all_node_types_round_trip) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto models = client->ListModels();
  CHECK_OK(models);
  CHECK_EQ(models->size(), std::size_t{1});
  CHECK_EQ((*models)[0].name, "mock");
  CHECK((*models)[0].renders_tools);

  PauseParams pause{1500, "gen", "canned"};
  GenerateParams gen;
  gen.system_prompt = "Be brief.";
  gen.template_ = "Q: {{human_message}}";
  gen.placement = Placement::BeforeUserAsSystem;
  gen.stream = false;
  gen.sampling = SamplingParams{0.5, 0.9, 10, 0.1, 1.2, 64, 42, 1000};
  gen.default_exit = "tool";
  CannedResponseParams canned{{"one", "two"}, Selection::Cycle, ""};
  ToolCallParams tool;
  tool.tools = {ToolDefinition{"set_light", "Turn a light on or off.",
                               {{"name", "string", "Which.", {"kitchen", "hall"}}, {"on", "boolean", ""}}}};
  tool.disposition = ToolCallDisposition::NotifyAndAcknowledge;
  tool.mode = ToolCallMode::DetectOnly;
  tool.system_prompt = "You control lights.";
  tool.acknowledge_text = "done";
  tool.pause_timeout_ms = 250;
  tool.tool_called_exit = "canned";
  tool.no_tool_called_exit = "canned";
  tool.timeout_exit = "canned";

  GraphDescription graph;
  graph.AddPause("pause", pause)
      .AddGenerate("gen", gen)
      .AddCannedResponse("canned", canned)
      .AddToolCall("tool", tool)
      .SetStartNode("pause")
      .SetDefaultModelName("mock");
  CreateAgentOptions options;
  options.enable_diagnostics = true;
  options.max_steps_per_turn = 8;
  auto agent = client->CreateAgent(graph, options);
  CHECK_OK(agent);

  const std::pair<const char*, NodeParams> sent[] = {
      {"pause", pause}, {"gen", gen}, {"canned", canned}, {"tool", tool}};
  for (const auto& [name, params] : sent) {
    auto got = agent->GetParams(name);
    CHECK_OK(got);
    CHECK_EQ(got->index(), params.index());
    CHECK_EQ(ToValue(*got), ToValue(params));
  }

  // Diagnostics come back as data.
  CHECK_OK(agent->SendMessage("hi"));
  auto step = agent->Resume();
  CHECK_OK(step);
  CHECK(step->result->debug_info.IsMap());
  CHECK(step->result->debug_info.Find("nodes") != nullptr);
}
