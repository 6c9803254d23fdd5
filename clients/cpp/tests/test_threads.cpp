// Threading: two agents on one connection, and blocking calls made from callbacks.
#include <atomic>
#include <mutex>

#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;

TEST(two_agents_interleaved) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto a = client->CreateAgent(ShopGraph());
  auto b = client->CreateAgent(ShopGraph());
  CHECK_OK(a);
  CHECK_OK(b);
  CHECK(a->id() != b->id());
  std::mutex mutex;
  std::string text_a, text_b;
  a->SetOnAnswerText([&](std::string_view t, bool is_delta, bool) {
    std::lock_guard<std::mutex> lock(mutex);
    if (is_delta) text_a += t;
  });
  b->SetOnAnswerText([&](std::string_view t, bool is_delta, bool) {
    std::lock_guard<std::mutex> lock(mutex);
    if (is_delta) text_b += t;
  });

  // Both paused at once; each changed differently; both resumed concurrently.
  Future<Step> sent_a = a->SendMessageAsync("from A");
  Future<Step> sent_b = b->SendMessageAsync("from B");
  CHECK_OK(sent_a.Get());
  CHECK_OK(sent_b.Get());
  CHECK(sent_a.Get()->paused() && sent_b.Get()->paused());
  CHECK_OK(a->ChangeParamFields("answer", Value::MakeMap().Set("template", "Alice: {{human_message}}")));
  CHECK_OK(b->ChangeParamFields("answer", Value::MakeMap().Set("template", "Bob: {{human_message}}")));

  Future<Step> done_b = b->ResumeAsync();
  Future<Step> done_a = a->ResumeAsync();
  auto step_a = done_a.Get();
  auto step_b = done_b.Get();
  CHECK_OK(step_a);
  CHECK_OK(step_b);
  CHECK_EQ(step_a->result->text, "You said: Alice: from A");
  CHECK_EQ(step_b->result->text, "You said: Bob: from B");
  std::lock_guard<std::mutex> lock(mutex);
  CHECK_EQ(text_a, step_a->result->text);
  CHECK_EQ(text_b, step_b->result->text);
}

TEST(blocking_call_from_callback) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto created = client->CreateAgent(ShopGraph());
  CHECK_OK(created);
  Agent agent = *created;
  Client& session = *client;
  std::mutex mutex;
  std::vector<int> codes;
  std::atomic<bool> callback_done{false};
  agent.SetOnPaused([&](std::string_view, std::string_view) {
    // Each would deadlock the reader thread: each fails at once, sending nothing.
    std::vector<int> got{agent.Resume().error().code, agent.GetParams("answer").error().code,
                         session.ListModels().error().code,
                         agent.CancelAsync().Get().error().code};
    std::lock_guard<std::mutex> lock(mutex);
    codes = got;
    callback_done = true;
  });
  auto step = agent.SendMessage("hello");
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK(Eventually([&] { return callback_done.load(); }));
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (int code : codes) CHECK_EQ(code, int(ErrorCode::BlockingCallInCallback));
  }
  // Only CancelAsync was sent (its Get was the refused part): the turn was cancelled.
  auto now = agent.Wait();
  CHECK_OK(now);
  CHECK(now->complete());
  CHECK_EQ(now->result->status, "cancelled");
}
