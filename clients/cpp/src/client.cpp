// Client: Connect, CreateAgent, ListModels, the save slots, Close over a Session.
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
  Value message = Value::MakeMap()
                      .Set("type", "CreateAgent")
                      .Set("graph", graph.ToValue())
                      .Set("enable_diagnostics", options.enable_diagnostics)
                      .Set("max_steps_per_turn", options.max_steps_per_turn);
  // Only when set: a server older than input policies never sees the field.
  if (options.input_policy != InputPolicy::Reject) {
    message.Set("input_policy", InputPolicyName(options.input_policy));
  }
  const InputPolicy policy = options.input_policy;
  session_->Request(std::move(message),
                    [session, created, policy](Result<Value> reply) {
                      if (!reply.ok()) return created.Set(reply.error());
                      // Registered before the next frame is read: the agent's first events
                      // find it.
                      auto core = std::make_shared<detail::AgentCore>(
                          session, reply->GetInt("agent_id"), policy);
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

// --- save slots ------------------------------------------------------------------------------

template <class T, class Start>
Result<T> Client::Block(const char* operation, std::chrono::milliseconds timeout, Start start) {
  if (!session_) return Error(ErrorCode::ConnectionDropped, "client moved");
  if (session_->OnReaderThread()) return detail::BlockingCallError(operation);
  const std::chrono::milliseconds limit = session_->Limit(timeout);
  Result<T> answer = start().Get(limit);
  if (!answer.ok() && answer.error().Is(ErrorCode::Timeout)) {
    return detail::TimeoutError(operation, limit);
  }
  return answer;
}

Future<Agent> Client::AdoptAsync(Value message, std::string slot) {
  if (!session_) return ReadyFuture<Agent>(Error(ErrorCode::ConnectionDropped, "client moved"));
  Promise<Agent> made(session_.get());
  std::shared_ptr<detail::Session> session = session_;
  session_->Request(std::move(message), [session, made, slot](Result<Value> reply) {
    if (!reply.ok()) return made.Set(reply.error());
    auto core = std::make_shared<detail::AgentCore>(
        session, reply->GetInt("agent_id"),
        detail::InputPolicyFromName(reply->GetString("input_policy")));
    // Registered before the next frame is read, as CreateAgent's. A LoadSlot in place of an
    // agent reuses its id: the old handle's agent is gone.
    if (auto old = session->AddAgent(core->id(), core)) old->Replaced(slot);
    made.Set(Agent(core));
  });
  return made.GetFuture();
}

Future<Agent> Client::LoadAsync(std::string_view slot, std::optional<std::int64_t> replace) {
  Value message = Value::MakeMap().Set("type", "LoadSlot").Set("slot", slot);
  message.Set("replace_agent_id", replace ? Value(*replace) : Value());
  return AdoptAsync(std::move(message), std::string(slot));
}

Result<Agent> Client::Load(std::string_view slot, std::optional<std::int64_t> replace,
                           std::chrono::milliseconds timeout) {
  return Block<Agent>("Load", timeout, [&] { return LoadAsync(slot, replace); });
}

Future<Agent> Client::ForkAsync(const Agent& source) {
  return AdoptAsync(Value::MakeMap().Set("type", "ForkAgent").Set("agent_id", source.id()), "");
}

Result<Agent> Client::Fork(const Agent& source, std::chrono::milliseconds timeout) {
  return Block<Agent>("Fork", timeout, [&] { return ForkAsync(source); });
}

Future<Agent> Client::ForkAsync(std::string_view slot) {
  return AdoptAsync(Value::MakeMap().Set("type", "ForkAgent").Set("slot", slot), "");
}

Result<Agent> Client::Fork(std::string_view slot, std::chrono::milliseconds timeout) {
  return Block<Agent>("Fork", timeout, [&] { return ForkAsync(slot); });
}

Future<std::vector<SlotInfo>> Client::ListSlotsAsync(std::optional<std::int64_t> agent_id) {
  if (!session_) {
    return ReadyFuture<std::vector<SlotInfo>>(Error(ErrorCode::ConnectionDropped, "client moved"));
  }
  Promise<std::vector<SlotInfo>> listed(session_.get());
  Value message = Value::MakeMap().Set("type", "ListSlots");
  message.Set("agent_id", agent_id ? Value(*agent_id) : Value());
  session_->Request(std::move(message), [listed](Result<Value> reply) {
    if (!reply.ok()) return listed.Set(reply.error());
    std::vector<SlotInfo> slots;
    if (const Value* items = reply->Find("slots"); items != nullptr && items->IsArray()) {
      for (const Value& item : *items->AsArray()) slots.push_back(detail::SlotFromWire(item));
    }
    listed.Set(std::move(slots));
  });
  return listed.GetFuture();
}

Result<std::vector<SlotInfo>> Client::ListSlots(std::optional<std::int64_t> agent_id,
                                                std::chrono::milliseconds timeout) {
  return Block<std::vector<SlotInfo>>("ListSlots", timeout,
                                      [&] { return ListSlotsAsync(agent_id); });
}

Future<bool> Client::DeleteSlotAsync(std::string_view slot) {
  if (!session_) return ReadyFuture<bool>(Error(ErrorCode::ConnectionDropped, "client moved"));
  Promise<bool> deleted(session_.get());
  session_->Request(Value::MakeMap().Set("type", "DeleteSlot").Set("slot", slot),
                    [deleted](Result<Value> reply) {
                      if (!reply.ok()) return deleted.Set(reply.error());
                      deleted.Set(reply->GetBool("deleted"));
                    });
  return deleted.GetFuture();
}

Result<bool> Client::DeleteSlot(std::string_view slot, std::chrono::milliseconds timeout) {
  return Block<bool>("DeleteSlot", timeout, [&] { return DeleteSlotAsync(slot); });
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
