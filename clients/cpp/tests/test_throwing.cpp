// The optional throwing wrapper, for applications built with exceptions (this file alone).
#include "check.hpp"
#include "graphs.hpp"
#include "turnloom/throwing.hpp"

using namespace tltest;

TEST(throwing_wrapper) {
  auto client = Client::Connect(ctx.Options());
  CHECK_OK(client);
  Agent agent = OrThrow(client->CreateAgent(TradeGraph()));
  CHECK(OrThrow(agent.SendMessage("hi")).paused());
  int code = 0;
  try {
    OrThrow(agent.Resume("no_such_node"));
  } catch (const Exception& e) {
    code = e.code();
  }
  CHECK_EQ(code, int(ErrorCode::UnknownNode));
  CHECK_EQ(OrThrow(agent.Resume()).result->text, "Deal.");
}
