// Pausing, changing a later node's params while paused, and resuming (plain and jump).
#include <atomic>
#include <mutex>

#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;

TEST(pause_change_params_resume) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);

  std::mutex mutex;
  std::string paused_at, deltas, final_text;
  int finals = 0;
  std::atomic<int> resumed{0};
  agent->SetOnPaused([&](std::string_view node, std::string_view exit) {
    std::lock_guard<std::mutex> lock(mutex);
    paused_at = std::string(node) + "->" + std::string(exit);
  });
  agent->SetOnResumed([&](std::string_view, std::string_view) { ++resumed; });
  agent->SetOnAnswerText([&](std::string_view text, bool is_delta, bool is_final) {
    std::lock_guard<std::mutex> lock(mutex);
    if (is_delta) deltas += text;
    if (is_final) {
      ++finals;
      final_text = text;
    }
  });

  auto step = agent->SendMessage("Do you sell swords?");
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK_EQ(step->pause->node_name, "gate");
  CHECK_EQ(step->pause->pending_exit, "default");
  CHECK_EQ(step->pause->pending_target, "answer");
  {
    std::lock_guard<std::mutex> lock(mutex);
    CHECK_EQ(paused_at, "gate->default");
  }

  // The baseline, changed and sent whole (an AgentProxy-style ChangeParams).
  auto baseline = agent->GetParams("answer");
  CHECK_OK(baseline);
  auto* generate = std::get_if<GenerateParams>(&baseline.value());
  CHECK(generate != nullptr);
  CHECK_EQ(generate->system_prompt, "You are Mira, a shopkeeper.");
  generate->template_ = "Trusted customer: {{human_message}}";
  CHECK_OK(agent->ChangeParams("answer", *generate));

  step = agent->Resume();
  CHECK_OK(step);
  CHECK(step->complete());
  CHECK_EQ(step->result->status, "success");
  CHECK_EQ(step->result->text, "You said: Trusted customer: Do you sell swords?");
  CHECK_EQ(resumed.load(), 1);
  std::lock_guard<std::mutex> lock(mutex);
  CHECK_EQ(deltas, step->result->text);
  CHECK_EQ(final_text, step->result->text);
  CHECK_EQ(finals, 1);
}

TEST(change_param_fields_partial) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  CHECK_OK(agent->SendMessage("one two three four"));
  // Only the named fields change, a nested map too: max_tokens cuts the echo to 3 words.
  CHECK_OK(agent->ChangeParamFields(
      "answer", Value::MakeMap().Set("sampling", Value::MakeMap().Set("max_tokens", 3))));
  auto params = agent->GetParams("answer");
  CHECK_OK(params);
  CHECK_EQ(std::get<GenerateParams>(*params).sampling.max_tokens, 3);
  CHECK_EQ(std::get<GenerateParams>(*params).sampling.temperature, 0.7);
  auto step = agent->Resume();
  CHECK_OK(step);
  CHECK_EQ(step->result->text, "You said: one");
  CHECK_EQ(step->result->tokens_generated, 3);
}

TEST(jump_resume) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(TradeGraph());
  CHECK_OK(agent);
  std::mutex mutex;
  std::string jumped_to;
  agent->SetOnResumed([&](std::string_view, std::string_view resume_node) {
    std::lock_guard<std::mutex> lock(mutex);
    jumped_to = resume_node;
  });
  auto step = agent->SendMessage("I'll take the sword.");
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK_EQ(step->pause->pending_target, "confirm");
  step = agent->Resume("decline");  // the game decides, not the graph's wiring
  CHECK_OK(step);
  CHECK_EQ(step->result->text, "Maybe later.");
  std::lock_guard<std::mutex> lock(mutex);
  CHECK_EQ(jumped_to, "decline");
}
