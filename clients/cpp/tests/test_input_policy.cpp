// Input policies: a message sent while the agent's turn is open waits (Enqueue) and is answered
// at its own turn's first step, cancels the open turn (Interrupt), or joins it (Merge); each
// message's fate arrives as a MessageEvent; SetInputPolicy changes the policy at rest.
#include <mutex>
#include <string>
#include <vector>

#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;

namespace {

// The agent's messages, pauses and completions, in arrival order (reader thread).
struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;

  void Watch(Agent& agent) {
    agent.SetOnMessage([this](const MessageEvent& m) {
      std::string turn = m.turn_id ? std::to_string(*m.turn_id) : "-";
      std::string line = "message " + m.fate + " " + turn + " " + m.text;
      if (m.replaced_turn_id) line += " replaces " + std::to_string(*m.replaced_turn_id);
      Add(line);
    });
    agent.SetOnPaused([this](std::string_view node, std::string_view) {
      Add("paused " + std::string(node));
    });
    agent.SetOnTurnComplete([this](const TurnResult& r) {
      Add("complete " + std::to_string(r.turn_id) + " " + r.status);
    });
  }
  void Add(std::string line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(std::move(line));
  }
  // The index of `line`, or -1.
  int Find(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (lines[i] == line) return static_cast<int>(i);
    }
    return -1;
  }
  int Count(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mutex);
    int n = 0;
    for (const auto& line : lines) n += line.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }
};

CreateAgentOptions With(InputPolicy policy) {
  CreateAgentOptions options;
  options.input_policy = policy;
  return options;
}

}  // namespace

TEST(input_policy_enqueue_answers_at_own_turn) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph(), With(InputPolicy::Enqueue));
  CHECK_OK(agent);
  Log log;
  log.Watch(*agent);

  auto first = agent->SendMessage("one");
  CHECK_OK(first);
  CHECK(first->paused());
  const std::int64_t turn = first->pause->turn_id;
  Future<Step> second = agent->SendMessageAsync("two");  // the first turn is open: it waits
  CHECK_OK(agent->GetParams("gate"));  // replies come in order: the Ack of "two" is in
  CHECK(!second.Ready());
  CHECK(log.Find("message queued - two") >= 0);

  auto done = agent->Resume();
  CHECK_OK(done);
  CHECK_EQ(done->result->text, "You said: one");
  auto step = second.Get(std::chrono::milliseconds(10000));
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK(step->pause->turn_id != turn);  // its own turn, not the one it waited behind
  // The first turn's end, then the "started" message event, then the new turn's pause.
  const int end = log.Find("complete " + std::to_string(turn) + " success");
  const int started = log.Find("message started " + std::to_string(step->pause->turn_id) + " two");
  CHECK(end >= 0);
  CHECK(started > end);
  CHECK(log.Count("paused") == 2);
  auto last = agent->Resume();
  CHECK_OK(last);
  CHECK_EQ(last->result->text, "You said: two");
}

TEST(input_policy_interrupt_merge_set_and_drop) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);

  // Interrupt: the open turn ends cancelled (before the new turn's answer), the message runs.
  auto interrupting = client->CreateAgent(ShopGraph(), With(InputPolicy::Interrupt));
  CHECK_OK(interrupting);
  Log log;
  log.Watch(*interrupting);
  auto one = interrupting->SendMessage("one");
  CHECK_OK(one);
  auto two = interrupting->SendMessage("two");
  CHECK_OK(two);
  CHECK(two->paused());
  const std::string cancelled = std::to_string(one->pause->turn_id);
  CHECK(log.Find("complete " + cancelled + " cancelled") >= 0);
  CHECK(log.Find("message interrupted " + std::to_string(two->pause->turn_id) + " two replaces " +
                 cancelled) >= 0);
  auto end = interrupting->Resume();
  CHECK_OK(end);
  CHECK_EQ(end->result->text, "You said: two");

  // Merge: both messages, joined by a newline.
  auto merging = client->CreateAgent(ShopGraph(), With(InputPolicy::Merge));
  CHECK_OK(merging);
  CHECK_OK(merging->SendMessage("one"));
  CHECK_OK(merging->SendMessage("two"));
  end = merging->Resume();
  CHECK_OK(end);
  CHECK_EQ(end->result->text, "You said: one\ntwo");

  // Reject (the default), then Enqueue set while paused; Destroy drops the waiting message.
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  Log quiet;
  quiet.Watch(*agent);
  CHECK_OK(agent->SendMessage("open"));
  CHECK_ERROR(agent->SendMessage("refused"), ErrorCode::AgentBusy);
  CHECK_EQ(quiet.Count("message"), 0);  // no message events under Reject
  CHECK_OK(agent->SetInputPolicy(InputPolicy::Enqueue));
  Future<Step> waiting = agent->SendMessageAsync("later");
  Future<Step> waiting_too = agent->SendMessageAsync("later still");
  CHECK_OK(agent->Destroy());
  CHECK_ERROR(waiting.Get(std::chrono::milliseconds(10000)), ErrorCode::AgentAlreadyDestroyed);
  CHECK_ERROR(waiting_too.Get(std::chrono::milliseconds(10000)), ErrorCode::AgentAlreadyDestroyed);
  CHECK_EQ(quiet.Count("message dropped"), 2);
  CHECK_ERROR(agent->SetInputPolicy(InputPolicy::Merge), ErrorCode::AgentAlreadyDestroyed);
}

// A queued message whose blocking SendMessage timed out (1003) keeps its place in line: the
// next queued message is still answered by its own turn, not by the timed-out one's.
TEST(input_policy_timed_out_message_keeps_its_place) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph(), With(InputPolicy::Enqueue));
  CHECK_OK(agent);
  CHECK_OK(agent->SendMessage("one"));
  CHECK_ERROR(agent->SendMessage("two", std::chrono::milliseconds(200)), ErrorCode::Timeout);
  Future<Step> three = agent->SendMessageAsync("three");
  auto done = agent->Resume();
  CHECK_OK(done);
  CHECK_EQ(done->result->text, "You said: one");
  auto two = agent->Wait();  // the turn of "two" runs now: its pause
  CHECK_OK(two);
  CHECK(two->paused());
  CHECK(!three.Ready());
  done = agent->Resume();
  CHECK_OK(done);
  CHECK_EQ(done->result->text, "You said: two");
  auto step = three.Get(std::chrono::milliseconds(10000));
  CHECK_OK(step);
  CHECK(step->paused());
  done = agent->Resume();
  CHECK_OK(done);
  CHECK_EQ(done->result->text, "You said: three");
}
