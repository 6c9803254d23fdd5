// Save slots against a real `serve --mock --store PATH`: Agent::Save, Client::Load (new, or in
// place of an agent: the old handle is then 3002), Client::Fork (of an agent, of a slot),
// ListSlots and DeleteSlot; and their refusals without a store.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;

namespace {

// A fresh temporary folder for the store (and a script), removed again by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        std::filesystem::temp_directory_path().string() + "/turnloom-slots-XXXXXX";
    if (mkdtemp(&pattern[0]) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  bool ok() const { return !path_.empty(); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A mock script whose model "slow" streams its one reply a word every 300 ms: a turn that is
// still running when the test saves it.
constexpr const char* kSlowScript =
    R"({"models": {"slow": [{"reply": "one two three four five six", "delay_ms": 300}]}})";

GraphDescription SlowGraph() {
  GraphDescription graph;
  graph.AddGenerate("say", GenerateParams{}).SetStartNode("say").SetDefaultModelName("slow");
  return graph;
}

bool Mentions(const Error& error, const char* what) {
  return error.message.find(what) != std::string::npos;
}

}  // namespace

TEST_OWN_SERVER(slots_save_load_fork_list_and_delete) {
  TempDir dir;
  CHECK(dir.ok());
  ServerProcess server;
  const std::string started = server.Start({"--store", dir.File("slots.db")});
  CHECK_EQ(started, "");
  ClientOptions options = ctx.Options();
  options.port = server.port();
  auto client = Client::Connect(options);
  CHECK_OK(client);

  CreateAgentOptions enqueue;
  enqueue.input_policy = InputPolicy::Enqueue;
  auto agent = client->CreateAgent(DoorGraph(ToolCallDisposition::AwaitResult), enqueue);
  CHECK_OK(agent);
  auto step = agent->SendMessage(kOpenDoorCall);
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK_EQ(step->pause->pending_calls.size(), std::size_t{1});
  const std::string call_id = step->pause->pending_calls[0].call_id;

  // Saved while paused with a tool call pending.
  auto info = agent->Save("door");
  CHECK_OK(info);
  CHECK_EQ(info->slot, "door");
  CHECK_EQ(info->agent_id, agent->id());
  CHECK(info->size > 0);
  CHECK(info->saved_at > 1.0e9);  // absolute seconds, not a monotonic clock
  auto first = agent->ResumeWithToolResult({call_id, "red"});
  CHECK_OK(first);
  CHECK(first->complete());
  CHECK_EQ(first->result->status, "success");

  // A fork of the slot stands at the saved pause, with the saved policy, and goes on alike.
  auto fork = client->Fork("door");
  CHECK_OK(fork);
  CHECK(fork->id() != agent->id());
  CHECK(fork->input_policy() == InputPolicy::Enqueue);
  auto at = fork->Wait();
  CHECK_OK(at);
  CHECK(at->paused());
  CHECK_EQ(at->pause->node_name, "detect");
  CHECK_EQ(at->pause->turn_id, step->pause->turn_id);
  CHECK_EQ(at->pause->pending_calls.size(), std::size_t{1});
  CHECK_EQ(at->pause->pending_calls[0].call_id, call_id);
  auto forked = fork->ResumeWithToolResult({call_id, "red"});
  CHECK_OK(forked);
  CHECK(forked->complete());
  CHECK_EQ(forked->result->text, first->result->text);

  // A fork of an agent at rest: it has the same last turn.
  auto again = client->Fork(*agent);
  CHECK_OK(again);
  auto last = again->Wait();
  CHECK_OK(last);
  CHECK(last->complete());
  CHECK_EQ(last->result->turn_id, first->result->turn_id);

  // Loading in place of the agent keeps its id; the old handle's agent is gone.
  auto replaced = client->Load("door", agent->id());
  CHECK_OK(replaced);
  CHECK_EQ(replaced->id(), agent->id());
  auto back = replaced->Wait();
  CHECK_OK(back);
  CHECK(back->paused());
  CHECK_EQ(back->pause->pending_calls[0].call_id, call_id);
  CHECK_ERROR(agent->SendMessage("the old face"), ErrorCode::AgentAlreadyDestroyed);
  // The new one answers the events of that id.
  auto resumed = replaced->ResumeWithToolResult({call_id, "red"});
  CHECK_OK(resumed);
  CHECK_EQ(resumed->result->text, first->result->text);

  // A second slot, then the listing (newest first, of one agent or of all).
  auto later = fork->Save("door-later");
  CHECK_OK(later);
  auto all = client->ListSlots();
  CHECK_OK(all);
  CHECK_EQ(all->size(), std::size_t{2});
  CHECK_EQ((*all)[0].slot, "door-later");
  CHECK_EQ((*all)[0].agent_id, fork->id());
  CHECK_EQ((*all)[1].slot, "door");
  auto mine = client->ListSlots(agent->id());
  CHECK_OK(mine);
  CHECK_EQ(mine->size(), std::size_t{1});
  CHECK_EQ((*mine)[0].slot, "door");
  CHECK_EQ((*mine)[0].size, info->size);

  // Slots are the server's: another session sees them and loads them into its own agents.
  auto other = Client::Connect(options);
  CHECK_OK(other);
  auto theirs = other->Load("door-later");
  CHECK_OK(theirs);
  auto theirs_at = theirs->Wait();
  CHECK_OK(theirs_at);
  CHECK(theirs_at->complete());
  CHECK_EQ(theirs_at->result->text, first->result->text);
  // ... but replaces only its own (3001 for another session's agent).
  CHECK_ERROR(other->Load("door", agent->id()), ErrorCode::InvalidAgentId);

  auto removed = client->DeleteSlot("door");
  CHECK_OK(removed);
  CHECK(*removed);
  auto removed_again = client->DeleteSlot("door");
  CHECK_OK(removed_again);
  CHECK(!*removed_again);
  auto missing = client->Load("door");
  CHECK_ERROR(missing, ErrorCode::InvalidParamValue);
  CHECK(Mentions(missing.error(), "no save slot 'door'"));
  CHECK(Mentions(missing.error(), "door-later"));  // it names those there are
}

// Replacing an agent whose turn is open: that turn ends cancelled on the old handle (its
// callbacks and waits), then the old handle refuses everything; a save while a turn runs is
// 3004; blocking slot calls from a callback fail at once.
TEST_OWN_SERVER(slots_replace_open_turn_and_refusals) {
  TempDir dir;
  CHECK(dir.ok());
  {
    std::ofstream script(dir.File("slow.json"));
    script << kSlowScript;
  }
  ServerProcess server;
  // A second --mock takes the script (argparse keeps the last).
  const std::string started =
      server.Start({"--mock", dir.File("slow.json"), "--store", dir.File("slots.db")});
  CHECK_EQ(started, "");
  ClientOptions options = ctx.Options();
  options.port = server.port();
  auto client = Client::Connect(options);
  CHECK_OK(client);

  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  CHECK_OK(agent->Save("fresh"));  // idle, before any turn
  std::vector<std::string> old_ends;
  agent->SetOnTurnComplete([&old_ends](const TurnResult& r) { old_ends.push_back(r.status); });
  CHECK_OK(agent->SendMessage("Keep my sword."));
  Future<std::optional<TurnResult>> old_end = agent->WaitCompleteAsync();
  CHECK_OK(agent->GetParams("gate"));  // replies come in order: the wait is registered
  auto replaced = client->Load("fresh", agent->id());
  CHECK_OK(replaced);
  auto ended = old_end.Get(std::chrono::milliseconds(10000));
  CHECK_OK(ended);
  CHECK(ended->has_value());
  CHECK_EQ((*ended)->status, "cancelled");
  CHECK_EQ(old_ends.size(), std::size_t{1});
  CHECK_ERROR(agent->Wait(), ErrorCode::AgentAlreadyDestroyed);
  CHECK_ERROR(agent->Save("fresh"), ErrorCode::AgentAlreadyDestroyed);
  auto fresh = replaced->Wait();
  CHECK_OK(fresh);
  CHECK(!fresh->paused() && !fresh->complete());  // the save was made before any turn
  auto step = replaced->SendMessage("Sell me a shield.");
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK_EQ(old_ends.size(), std::size_t{1});  // the new agent's events are not the old handle's

  // A turn that runs cannot be saved or forked.
  auto slow = client->CreateAgent(SlowGraph());
  CHECK_OK(slow);
  Future<Step> running = slow->SendMessageAsync("Tell me a story.");
  CHECK_ERROR(slow->Save("story"), ErrorCode::AgentBusy);
  CHECK_ERROR(client->Fork(*slow), ErrorCode::AgentBusy);
  auto told = running.Get(std::chrono::milliseconds(20000));
  CHECK_OK(told);
  CHECK_EQ(told->result->text, "one two three four five six");

  // Bad names and unknown slots are 3007; an unknown agent is 3001.
  CHECK_ERROR(replaced->Save(""), ErrorCode::InvalidParamValue);
  CHECK_ERROR(replaced->Save(std::string(129, 's')), ErrorCode::InvalidParamValue);
  CHECK_ERROR(client->Fork("no-such-slot"), ErrorCode::InvalidParamValue);
  CHECK_ERROR(client->Load("fresh", 424242), ErrorCode::InvalidAgentId);

  // From a callback only the Async forms work (the blocking ones would wait for themselves).
  Client* self = &*client;
  Future<std::vector<SlotInfo>> listed;
  std::optional<Error> blocked;
  replaced->SetOnTurnComplete([self, &listed, &blocked](const TurnResult&) {
    auto refused = self->ListSlots();
    if (!refused.ok()) blocked = refused.error();
    listed = self->ListSlotsAsync();
  });
  CHECK_OK(replaced->Resume());
  CHECK(blocked.has_value());
  CHECK(blocked->Is(ErrorCode::BlockingCallInCallback));
  auto slots = listed.Get(std::chrono::milliseconds(10000));
  CHECK_OK(slots);
  CHECK_EQ(slots->size(), std::size_t{1});
  CHECK_EQ((*slots)[0].slot, "fresh");
}

// A server without a store: slots are 3007, naming the missing store; a fork of a live agent
// needs no store.
TEST(slots_need_a_store) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  CHECK_OK(agent->SendMessage("Hello."));
  auto save = agent->Save("door");
  CHECK_ERROR(save, ErrorCode::InvalidParamValue);
  CHECK(Mentions(save.error(), "store"));
  CHECK_ERROR(client->Load("door"), ErrorCode::InvalidParamValue);
  CHECK_ERROR(client->Fork("door"), ErrorCode::InvalidParamValue);
  CHECK_ERROR(client->ListSlots(), ErrorCode::InvalidParamValue);
  CHECK_ERROR(client->DeleteSlot("door"), ErrorCode::InvalidParamValue);
  auto fork = client->Fork(*agent);
  CHECK_OK(fork);
  auto at = fork->Wait();
  CHECK_OK(at);
  CHECK(at->paused());
  auto done = fork->Resume();
  CHECK_OK(done);
  CHECK_EQ(done->result->text, "You said: Hello.");
  auto still = agent->Wait();  // the original is untouched
  CHECK_OK(still);
  CHECK(still->paused());
}
