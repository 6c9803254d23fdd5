// Tool calls: the AwaitResult round trip from a callback, registered tools and kept batches.
#include <atomic>
#include <mutex>

#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;

TEST(await_result_from_callback_async) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto created = client->CreateAgent(DoorGraph(ToolCallDisposition::AwaitResult));
  CHECK_OK(created);
  Agent agent = *created;

  std::mutex mutex;
  ToolCallEvent seen;
  std::atomic<int> resume_answers{0};
  std::atomic<bool> resume_ok{false};
  agent.SetOnToolCallEvent([&](const ToolCallEvent& event) {
    std::lock_guard<std::mutex> lock(mutex);
    seen = event;
  });
  agent.SetOnToolCallWithId([&](std::string_view call_id, std::string_view tool_name,
                                std::string_view) {
    // Reader thread: the async form, its answer delivered by a completion callback.
    if (tool_name != "open_door") return;
    agent.ResumeWithToolResultAsync({std::string(call_id), "{\"opened\":true}"})
        .Then([&](Result<Step> answer) {
          resume_ok = answer.ok();
          ++resume_answers;
        });
  });

  auto step = agent.SendMessage(kOpenDoorCall);
  CHECK_OK(step);
  CHECK(step->paused());  // the step of SendMessage is the pause itself
  auto done = agent.WaitComplete();
  CHECK_OK(done);
  CHECK(done->has_value());
  CHECK_EQ((*done)->status, "success");
  CHECK(Eventually([&] { return resume_answers.load() == 1; }));
  CHECK(resume_ok.load());
  std::lock_guard<std::mutex> lock(mutex);
  CHECK_EQ(seen.tool_name, "open_door");
  CHECK_EQ(seen.node_name, "detect");
  CHECK_EQ(seen.disposition, "await_result");
  CHECK_EQ(seen.arguments.GetString("door_id"), "7");
  CHECK(seen.arguments_json.find("\"door_id\"") != std::string::npos);
}

TEST(register_tool_auto_resume) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(DoorGraph(ToolCallDisposition::AwaitResult));
  CHECK_OK(agent);
  std::atomic<int> calls{0};
  std::mutex mutex;
  std::string door;
  agent->RegisterTool("open_door", [&](const ToolCallEvent& call) {
    ++calls;
    std::lock_guard<std::mutex> lock(mutex);
    door = call.arguments.GetString("door_id");
    return std::string("{\"opened\":true}");
  });
  // The caller waits on through the automatic resume, to the completion.
  auto step = agent->SendMessage(kOpenDoorCall);
  CHECK_OK(step);
  CHECK(step->complete());
  CHECK_EQ(step->result->status, "success");
  CHECK_EQ(calls.load(), 1);
  CHECK(!agent->HasPausedToolBatch());
  {
    std::lock_guard<std::mutex> lock(mutex);
    CHECK_EQ(door, "7");
  }
  CHECK_ERROR(agent->RetryPausedToolBatch(), ErrorCode::NoPausedToolBatch);

  // Pause disposition: the handler runs for its side effect, the resume carries no results.
  auto pausing = client->CreateAgent(DoorGraph(ToolCallDisposition::Pause));
  CHECK_OK(pausing);
  std::atomic<int> side_effects{0};
  pausing->RegisterTool("open_door", [&](const ToolCallEvent&) {
    ++side_effects;
    return std::string("ignored");
  });
  step = pausing->SendMessage(kOpenDoorCall);
  CHECK_OK(step);
  CHECK(step->complete());
  CHECK_EQ(side_effects.load(), 1);
}

TEST(refused_auto_resume_keeps_batch) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(DoorGraph(ToolCallDisposition::AwaitResult));
  CHECK_OK(agent);
  // A result over 64 KiB: the server refuses the automatic resume (3016).
  agent->RegisterTool("open_door", [](const ToolCallEvent&) { return std::string(70000, 'x'); });
  auto step = agent->SendMessage(kOpenDoorCall);
  CHECK_OK(step);
  CHECK(step->paused());  // the waiter gets the pause back
  CHECK(agent->HasPausedToolBatch());
  CHECK_ERROR(agent->RetryPausedToolBatch(), ErrorCode::InvalidToolResults);
  CHECK(agent->HasPausedToolBatch());  // still kept for another try
  const std::string call_id = step->pause->pending_calls[0].call_id;
  step = agent->ResumeWithToolResult({call_id, "small"});
  CHECK_OK(step);
  CHECK_EQ(step->result->status, "success");
  CHECK(!agent->HasPausedToolBatch());
}
