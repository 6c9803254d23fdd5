// Cancel, pause time-outs, client time-outs, frame limits, connection loss and close.
#include <atomic>
#include <chrono>
#include <mutex>

#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;
using Clock = std::chrono::steady_clock;

TEST(cancel_paused_turn) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  std::mutex mutex;
  std::string completed;
  int finals = 0;
  agent->SetOnTurnComplete([&](const TurnResult& result) {
    std::lock_guard<std::mutex> lock(mutex);
    completed = result.status;
  });
  agent->SetOnAnswerText([&](std::string_view, bool, bool is_final) {
    std::lock_guard<std::mutex> lock(mutex);
    finals += is_final ? 1 : 0;
  });
  CHECK_OK(agent->SendMessage("hello"));
  auto cancelled = agent->Cancel();
  CHECK_OK(cancelled);
  CHECK(*cancelled);
  {  // the completion and the final chunk come before Cancel's reply
    std::lock_guard<std::mutex> lock(mutex);
    CHECK_EQ(completed, "cancelled");
    CHECK_EQ(finals, 1);
  }
  CHECK_EQ(agent->LastResult()->status, "cancelled");
  auto again = agent->Cancel();
  CHECK_OK(again);
  CHECK(!*again);  // no open turn: not an error
  auto step = agent->SendMessage("next");  // the agent is usable again
  CHECK_OK(step);
  CHECK(step->paused());
}

TEST(pause_timeout) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto ends = client->CreateAgent(ShopGraph(300));
  CHECK_OK(ends);
  auto step = ends->SendMessage("hello");
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK_EQ(step->pause->timeout_ms, 300);
  auto done = ends->WaitComplete(std::chrono::seconds(5));
  CHECK_OK(done);
  CHECK_EQ((*done)->status, "pause_timed_out");

  auto falls_back = client->CreateAgent(ShopGraph(300, "slow"));
  CHECK_OK(falls_back);
  std::mutex mutex;
  std::string resumed_to;
  falls_back->SetOnResumed([&](std::string_view, std::string_view node) {
    std::lock_guard<std::mutex> lock(mutex);
    resumed_to = node;
  });
  CHECK_OK(falls_back->SendMessage("hello"));
  done = falls_back->WaitComplete(std::chrono::seconds(5));
  CHECK_OK(done);
  CHECK_EQ((*done)->status, "success");
  CHECK_EQ((*done)->text, "Too slow.");
  std::lock_guard<std::mutex> lock(mutex);
  CHECK_EQ(resumed_to, "slow");
}

TEST(client_timeout_and_frame_limit) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  // 5003 client-side: over max_frame_bytes, nothing is sent.
  CHECK_ERROR(agent->SendMessage(std::string(2 * 1024 * 1024, 'a')), ErrorCode::FrameTooLarge);
  CHECK_OK(agent->SendMessage("hello"));
  // 1003: no one resumes this pause; the wait gives up, the connection stays usable.
  const auto start = Clock::now();
  CHECK_ERROR(agent->WaitComplete(std::chrono::milliseconds(200)), ErrorCode::Timeout);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  auto step = agent->Resume();
  CHECK_OK(step);
  CHECK_EQ(step->result->status, "success");
}

TEST(connect_failures) {
  ClientOptions options = ctx.Options();
  ctx.server.Stop();  // nothing listens on that port any more
  const auto start = Clock::now();
  auto client = Client::Connect(options);
  CHECK_ERROR(client, ErrorCode::ConnectionFailed);
  CHECK(Clock::now() - start < std::chrono::seconds(5));
}

TEST(server_killed_mid_turn) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  std::atomic<int> agent_errors{0}, connection_errors{0};
  agent->SetOnError([&](const Error& error) {
    if (error.Is(ErrorCode::ConnectionDropped)) ++agent_errors;
  });
  client->SetOnConnectionLost([&](const Error& error) {
    if (error.Is(ErrorCode::ConnectionDropped)) ++connection_errors;
  });
  CHECK_OK(agent->SendMessage("hello"));
  // Waits through the pause: whether its GetAgentState is answered before the kill or not, it
  // must end 1002 (a pending request and a completion waiter are failed alike).
  Future<std::optional<TurnResult>> waiting = agent->WaitCompleteAsync();
  CHECK(!waiting.Ready());

  ctx.server.Kill();
  const auto start = Clock::now();
  CHECK_ERROR(waiting.Get(std::chrono::seconds(5)), ErrorCode::ConnectionDropped);
  CHECK(Clock::now() - start < std::chrono::seconds(3));
  CHECK(Eventually([&] { return agent_errors.load() == 1 && connection_errors.load() == 1; }));
  CHECK(!client->connected());
  CHECK_ERROR(agent->Resume(), ErrorCode::ConnectionDropped);  // later calls fail at once
  CHECK_ERROR(client->ListModels(), ErrorCode::ConnectionDropped);
  CHECK_OK(client->Close());
  CHECK(Clock::now() - start < std::chrono::seconds(3));
}

TEST(close_ends_open_turns) {
  std::atomic<int> cancelled{0};
  {
    auto client = Client::Connect(ctx.Options());
    CHECK_OK(client);
    auto agent = client->CreateAgent(ShopGraph());
    CHECK_OK(agent);
    agent->SetOnTurnComplete([&](const TurnResult& result) {
      if (result.status == "cancelled") ++cancelled;
    });
    CHECK_OK(agent->SendMessage("hello"));
    CHECK_OK(client->Close());
    CHECK_ERROR(agent->Resume(), ErrorCode::AgentAlreadyDestroyed);
  }  // the client's destructor after Close: nothing left to do
  CHECK_EQ(cancelled.load(), 1);
}

TEST(server_shutdown_notice) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  std::atomic<int> completions{0};
  agent->SetOnTurnComplete([&](const TurnResult&) { ++completions; });
  CHECK_OK(agent->SendMessage("hello"));
  ctx.server.Stop();  // SIGTERM: graceful, open turns end cancelled, then 2001, then close
  CHECK(Eventually([&] { return !client->connected(); }));
  CHECK_EQ(completions.load(), 1);
  auto refused = agent->SendMessage("again");
  CHECK(!refused.ok());
  CHECK(refused.error().Is(ErrorCode::ServerShuttingDown) ||
        refused.error().Is(ErrorCode::ConnectionDropped));
}
