// The shopkeeper: the turn pauses before Mira answers; the game changes her prompt; resume.
#include <cstdio>
#include <cstdlib>
#include <turnloom/turnloom.hpp>

int main() {
  turnloom::ClientOptions options;  // `python -m turnloom serve --mock` on 127.0.0.1
  const char* port = std::getenv("TURNLOOM_PORT");
  options.port = static_cast<std::uint16_t>(port ? std::atoi(port) : 7411);
  auto client = turnloom::Client::Connect(options);
  if (!client) return std::printf("%s\n", client.error().ToString().c_str()), 1;

  turnloom::PauseParams listen;
  listen.default_exit = "answer";
  turnloom::GenerateParams answer;
  answer.system_prompt = "You are Mira, a shopkeeper.";
  turnloom::GraphDescription graph;
  graph.AddPause("listen", listen).AddGenerate("answer", answer);
  graph.SetStartNode("listen").SetDefaultModelName("mock");
  auto agent = client->CreateAgent(graph);
  if (!agent) return std::printf("%s\n", agent.error().ToString().c_str()), 1;

  auto step = agent->SendMessage("Do you sell swords?");  // returns at the pause...
  while (step && step->paused()) {
    std::printf("paused after %s\n", step->pause->node_name.c_str());
    answer.template_ = "(a trusted customer) {{human_message}}";
    if (auto changed = agent->ChangeParams("answer", answer); !changed) break;
    step = agent->Resume();  // ...or at the completion
  }
  if (!step || !step->complete()) return std::printf("the turn did not complete\n"), 1;
  std::printf("%s: %s\n", step->result->status.c_str(), step->result->text.c_str());
}
