// Client: Connect, CreateAgent, ListModels, Close over a Session.
#include "turnloom/client.hpp"

#include "agent_core.hpp"
#include "records.hpp"
#include "session.hpp"

namespace turnloom {

Result<Client> Client::Connect(const ClientOptions& options) {
  Result<std::shared_ptr<detail::Session>> session = detail::Session::Open(options);
  if (!session.ok()) return session.error();
  return Client(std::move(session).value());
}

Client::Client(std::shared_ptr<detail::Session> session) : session_(std::move(session)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    if (session_) (void)session_->Close(std::chrono::milliseconds(5000));
    session_ = std::move(other.session_);
  }
  return *this;
}
Client::~Client() {
  if (session_) (void)session_->Close(std::chrono::milliseconds(5000));
}

Future<Agent> Client::CreateAgentAsync(const GraphDescription& graph,
                                       const CreateAgentOptions& options) {
  if (!session_) return ReadyFuture<Agent>(Error(ErrorCode::ConnectionDropped, "client moved"));
  Promise<Agent> created(session_.get());
  std::shared_ptr<detail::Session> session = session_;
  session_->Request(Value::MakeMap()
                        .Set("type", "CreateAgent")
                        .Set("graph", graph.ToValue())
                        .Set("enable_diagnostics", options.enable_diagnostics)
                        .Set("max_steps_per_turn", options.max_steps_per_turn),
                    [session, created](Result<Value> reply) {
                      if (!reply.ok()) return created.Set(reply.error());
                      // Registered before the next frame is read: the agent's first events
                      // find it.
                      auto core = std::make_shared<detail::AgentCore>(session,
                                                                      reply->GetInt("agent_id"));
                      session->AddAgent(core->id(), core);
                      created.Set(Agent(core));
                    });
  return created.GetFuture();
}

Result<Agent> Client::CreateAgent(const GraphDescription& graph,
                                  const CreateAgentOptions& options,
                                  std::chrono::milliseconds timeout) {
  if (!session_) return Error(ErrorCode::ConnectionDropped, "client moved");
  if (session_->OnReaderThread()) return detail::BlockingCallError("CreateAgent");
  return CreateAgentAsync(graph, options).Get(session_->Limit(timeout));
}

Future<std::vector<ModelInfo>> Client::ListModelsAsync() {
  if (!session_) {
    return ReadyFuture<std::vector<ModelInfo>>(Error(ErrorCode::ConnectionDropped, "client moved"));
  }
  Promise<std::vector<ModelInfo>> listed(session_.get());
  session_->Request(Value::MakeMap().Set("type", "ListModels"), [listed](Result<Value> reply) {
    if (!reply.ok()) return listed.Set(reply.error());
    std::vector<ModelInfo> models;
    if (const Value* items = reply->Find("models"); items != nullptr && items->IsArray()) {
      for (const Value& item : *items->AsArray()) models.push_back(detail::ModelInfoFromWire(item));
    }
    listed.Set(std::move(models));
  });
  return listed.GetFuture();
}

Result<std::vector<ModelInfo>> Client::ListModels(std::chrono::milliseconds timeout) {
  if (!session_) return Error(ErrorCode::ConnectionDropped, "client moved");
  if (session_->OnReaderThread()) return detail::BlockingCallError("ListModels");
  return ListModelsAsync().Get(session_->Limit(timeout));
}

void Client::SetOnConnectionLost(std::function<void(const Error&)> callback) {
  if (session_) session_->SetOnConnectionLost(std::move(callback));
}

Result<void> Client::Close(std::chrono::milliseconds timeout) {
  if (!session_) return Result<void>();
  return session_->Close(timeout);
}

bool Client::connected() const noexcept { return session_ && session_->connected(); }
std::int64_t Client::session_id() const noexcept { return session_ ? session_->session_id() : 0; }

}  // namespace turnloom
