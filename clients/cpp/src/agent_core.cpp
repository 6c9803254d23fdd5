// AgentCore: events to callbacks and waiters, registered tools, and the agent's requests.
#include "agent_core.hpp"

#include "records.hpp"

namespace turnloom::detail {

AgentCore::AgentCore(std::shared_ptr<Session> session, std::int64_t id, InputPolicy input_policy)
    : session_(std::move(session)), id_(id), input_policy_(input_policy) {}

// --- events ----------------------------------------------------------------------------------

void AgentCore::OnEvent(const Value& frame) {
  const std::string type = frame.GetString("type");
  if (type == "AnswerText") {
    AnswerTextCallback callback;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      callback = callbacks_.answer_text;
    }
    if (callback) {
      callback(frame.GetString("text"), frame.GetBool("is_delta"), frame.GetBool("is_final"));
    }
  } else if (type == "TurnComplete") {
    Completed(ResultFromWire(frame));
  } else if (type == "NodeEvent") {
    const std::string event = frame.GetString("event");
    if (event == "paused") {
      Paused(PauseFromWire(frame));
    } else if (event == "resumed") {
      ResumedCallback callback;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        pause_.reset();
        callback = callbacks_.resumed;
      }
      if (callback) callback(frame.GetString("node_name"), frame.GetString("resume_node"));
    } else if (event == "tool_call") {
      ToolCallEvent call = ToolCallFromWire(frame);
      ToolCallWithIdCallback with_id;
      ToolCallEventCallback with_event;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        with_id = callbacks_.tool_call_with_id;
        with_event = callbacks_.tool_call_event;
      }
      if (with_id) with_id(call.call_id, call.tool_name, call.arguments_json);
      if (with_event) with_event(call);
    } else if (event == "message") {
      OnMessage(MessageFromWire(frame));
    }
    // Other events: a newer server's; ignored.
  }
}

// While messages wait, every turn that starts plainly is the oldest one's (the agent is busy
// until its queue is empty; interrupt and merge report their own fates).
void AgentCore::OnMessage(MessageEvent event) {
  MessageCallback callback;
  std::optional<Promise<Step>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    callback = callbacks_.message;
    if (!queued_.empty() && (event.fate == "started" || event.fate == "dropped")) {
      Promise<Step> oldest = queued_.front();
      queued_.erase(queued_.begin());
      if (event.fate == "started") {
        steps_.push_back(oldest);
      } else {
        dropped = oldest;
      }
    }
  }
  if (dropped) {
    dropped->Set(Error(ErrorCode::AgentAlreadyDestroyed,
                       "agent " + std::to_string(id_) +
                           " was destroyed while the message waited in its queue"));
  }
  if (callback) callback(event);
}

void AgentCore::Paused(PauseInfo info) {
  PausedCallback callback;
  std::vector<ToolHandler> handlers;
  std::uint64_t serial = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    kept_batch_.reset();
    pause_ = info;
    serial = ++pause_serial_;
    callback = callbacks_.paused;
    for (const ToolCallEvent& call : info.pending_calls) {
      auto it = tools_.find(call.tool_name);
      if (it == tools_.end()) {
        handlers.clear();  // registered tools answer a batch only when they cover all of it
        break;
      }
      handlers.push_back(it->second);
    }
  }
  if (callback) callback(info.node_name, info.pending_exit);
  if (handlers.empty()) {
    SettleSteps(Step{info, std::nullopt});
    return;
  }

  // Registered tools answer the batch and resume; a waiting caller waits on through that
  // resume, unless the server refuses it: then the batch is kept and the caller gets the pause.
  std::vector<ToolResult> batch;
  for (std::size_t i = 0; i < handlers.size(); ++i) {
    std::string output = handlers[i](info.pending_calls[i]);
    // Pause / PauseAndAcknowledge: the handlers run for their side effects; results would be
    // refused (3016).
    if (info.awaits_results) batch.push_back({info.pending_calls[i].call_id, std::move(output)});
  }
  std::uint64_t batch_serial = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    kept_batch_ = batch;
    batch_serial = ++batch_serial_;
  }
  Value message = Value::MakeMap()
                      .Set("type", "ResumeAgent")
                      .Set("agent_id", id_)
                      .Set("resume_node", "")
                      .Set("tool_results", ToolResultsToWire(batch));
  auto self = shared_from_this();
  session_->Request(std::move(message), [self, serial, batch_serial, info](Result<Value> reply) {
    std::unique_lock<std::mutex> lock(self->mutex_);
    if (reply.ok()) {
      if (self->batch_serial_ == batch_serial) self->kept_batch_.reset();
      return;
    }
    const bool still_paused = self->pause_ && self->pause_serial_ == serial;
    lock.unlock();
    if (still_paused) self->SettleSteps(Step{info, std::nullopt});
  });
}

void AgentCore::Completed(TurnResult result) {
  TurnCompleteCallback callback;
  std::vector<Promise<std::optional<TurnResult>>> completions;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pause_.reset();
    kept_batch_.reset();
    last_result_ = result;
    callback = callbacks_.turn_complete;
    completions.swap(completions_);
  }
  if (callback) callback(result);
  SettleSteps(Step{std::nullopt, result});
  for (auto& waiter : completions) waiter.Set(std::optional<TurnResult>(result));
}

void AgentCore::SettleSteps(const Step& step) {
  std::vector<Promise<Step>> steps;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    steps.swap(steps_);
  }
  for (auto& waiter : steps) waiter.Set(step);
}

void AgentCore::Fail(const Error& error) {
  std::vector<Promise<Step>> steps;
  std::vector<Promise<std::optional<TurnResult>>> completions;
  AgentErrorCallback callback;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    steps.swap(steps_);
    steps.insert(steps.end(), queued_.begin(), queued_.end());
    queued_.clear();
    completions.swap(completions_);
    callback = callbacks_.error;
  }
  for (auto& waiter : steps) waiter.Set(error);
  for (auto& waiter : completions) waiter.Set(error);
  if (callback) callback(error);
}

void AgentCore::Replaced(const std::string& slot) {
  std::vector<Promise<Step>> steps;
  std::vector<Promise<std::optional<TurnResult>>> completions;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    destroyed_ = true;
    steps.swap(steps_);
    steps.insert(steps.end(), queued_.begin(), queued_.end());
    queued_.clear();
    completions.swap(completions_);
  }
  // Its open turn ended cancelled before the reply (settling its waiters); what is left
  // would wait forever.
  const Error gone(ErrorCode::AgentAlreadyDestroyed,
                   "agent " + std::to_string(id_) + " was replaced by save slot '" + slot + "'");
  for (auto& waiter : steps) waiter.Set(gone);
  for (auto& waiter : completions) waiter.Set(gone);
}

// --- requests --------------------------------------------------------------------------------

std::optional<Error> AgentCore::Refusal(const char* operation) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!destroyed_) return std::nullopt;
  return Error(ErrorCode::AgentAlreadyDestroyed,
               "agent " + std::to_string(id_) + " was destroyed; " + operation + " refused");
}

Future<Step> AgentCore::StepRequest(const char* operation, Value message,
                                    std::function<void()> on_accepted) {
  Promise<Step> step(session_.get());
  if (auto refused = Refusal(operation)) {
    step.Set(*refused);
    return step.GetFuture();
  }
  message.Set("agent_id", id_);
  auto self = shared_from_this();
  session_->Request(std::move(message), [self, step, on_accepted](Result<Value> reply) {
    if (!reply.ok()) {
      step.Set(reply.error());
      return;
    }
    if (on_accepted) on_accepted();
    std::lock_guard<std::mutex> lock(self->mutex_);
    // A queued message's Ack (Enqueue): its step comes after its "started" event.
    (reply->GetBool("queued") ? self->queued_ : self->steps_).push_back(step);
  });
  return step.GetFuture();
}

template <class T>
Future<T> AgentCore::Call(const char* operation, Value message,
                          std::function<Result<T>(const Value&)> on_reply) {
  Promise<T> answer(session_.get());
  if (auto refused = Refusal(operation)) {
    answer.Set(*refused);
    return answer.GetFuture();
  }
  message.Set("agent_id", id_);
  session_->Request(std::move(message), [answer, on_reply](Result<Value> reply) {
    if (!reply.ok()) {
      answer.Set(reply.error());
    } else {
      answer.Set(on_reply(reply.value()));
    }
  });
  return answer.GetFuture();
}

Future<Step> AgentCore::SendMessageAsync(std::string_view text) {
  return StepRequest("send_message", Value::MakeMap().Set("type", "SendMessage").Set("text", text));
}

Future<Step> AgentCore::ResumeAsync(std::string_view resume_node, std::vector<ToolResult> results) {
  return StepRequest("resume", Value::MakeMap()
                                   .Set("type", "ResumeAgent")
                                   .Set("resume_node", resume_node)
                                   .Set("tool_results", ToolResultsToWire(results)));
}

Future<Step> AgentCore::RetryPausedToolBatchAsync() {
  std::vector<ToolResult> batch;
  std::uint64_t serial = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!kept_batch_) {
      return ReadyFuture<Step>(Error(ErrorCode::NoPausedToolBatch,
                                     "agent " + std::to_string(id_) +
                                         ": no paused tool batch is kept; nothing to retry"));
    }
    batch = *kept_batch_;
    serial = batch_serial_;
  }
  auto self = shared_from_this();
  return StepRequest("retry_paused_tool_batch",
                     Value::MakeMap()
                         .Set("type", "ResumeAgent")
                         .Set("resume_node", "")
                         .Set("tool_results", ToolResultsToWire(batch)),
                     [self, serial] {
                       std::lock_guard<std::mutex> lock(self->mutex_);
                       if (self->batch_serial_ == serial) self->kept_batch_.reset();
                     });
}

Future<void> AgentCore::SetInputPolicyAsync(InputPolicy policy) {
  auto self = shared_from_this();
  return Call<void>(
      "set_input_policy",
      Value::MakeMap().Set("type", "SetInputPolicy").Set("input_policy", InputPolicyName(policy)),
      [self, policy](const Value&) {
        std::lock_guard<std::mutex> lock(self->mutex_);
        self->input_policy_ = policy;
        return Result<void>();
      });
}

InputPolicy AgentCore::input_policy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return input_policy_;
}

Future<SlotInfo> AgentCore::SaveAsync(std::string_view slot) {
  return Call<SlotInfo>("save", Value::MakeMap().Set("type", "SaveSlot").Set("slot", slot),
                        [](const Value& reply) { return Result<SlotInfo>(SlotFromWire(reply)); });
}

Future<void> AgentCore::ChangeParamsAsync(std::string_view node_name, Value params,
                                          const char* node_type) {
  Value message = Value::MakeMap()
                      .Set("type", "ChangeAgentParam")
                      .Set("node_name", node_name)
                      .Set("params", std::move(params));
  if (node_type != nullptr) message.Set("node_type", node_type);
  return Call<void>("change_params", std::move(message),
                    [](const Value&) { return Result<void>(); });
}

Future<NodeParams> AgentCore::GetParamsAsync(std::string_view node_name) {
  return Call<NodeParams>(
      "get_params", Value::MakeMap().Set("type", "GetAgentParam").Set("node_name", node_name),
      [](const Value& reply) -> Result<NodeParams> {
        const Value* params = reply.Find("params");
        return NodeParamsFromValue(reply.GetString("node_type"), params ? *params : Value());
      });
}

Future<bool> AgentCore::CancelAsync() {
  return Call<bool>("cancel", Value::MakeMap().Set("type", "Cancel"),
                    [](const Value& reply) { return Result<bool>(reply.GetBool("cancelled")); });
}

Future<void> AgentCore::DestroyAsync() {
  auto self = shared_from_this();
  return Call<void>("destroy", Value::MakeMap().Set("type", "DestroyAgent"),
                    [self](const Value&) {
                      {
                        std::lock_guard<std::mutex> lock(self->mutex_);
                        self->destroyed_ = true;
                      }
                      self->session_->RemoveAgent(self->id_);
                      return Result<void>();
                    });
}

// GetAgentState answers at once when the agent is paused or idle; otherwise the next pause or
// completion does (docs/protocol.md section 5, point 4).
Future<Step> AgentCore::WaitAsync() {
  Promise<Step> step(session_.get());
  if (auto refused = Refusal("wait")) {
    step.Set(*refused);
    return step.GetFuture();
  }
  auto self = shared_from_this();
  session_->Request(
      Value::MakeMap().Set("type", "GetAgentState").Set("agent_id", id_),
      [self, step](Result<Value> reply) {
        if (!reply.ok()) return step.Set(reply.error());
        const std::string state = reply->GetString("state");
        const Value* pause = reply->Find("pause");
        const Value* last = reply->Find("last_result");
        if (state == "idle") {
          Step now;
          if (last != nullptr && last->IsMap()) now.result = ResultFromWire(*last);
          return step.Set(now);
        }
        if (state == "paused" && pause != nullptr && pause->IsMap()) {
          // The state's `pause` map leaves the turn to the reply's own turn_id.
          PauseInfo info = PauseFromWire(*pause);
          if (info.turn_id == 0) info.turn_id = reply->GetInt("turn_id");
          return step.Set(Step{std::move(info), std::nullopt});
        }
        std::lock_guard<std::mutex> lock(self->mutex_);
        self->steps_.push_back(step);
      });
  return step.GetFuture();
}

Future<std::optional<TurnResult>> AgentCore::WaitCompleteAsync() {
  Promise<std::optional<TurnResult>> done(session_.get());
  if (auto refused = Refusal("wait_complete")) {
    done.Set(*refused);
    return done.GetFuture();
  }
  auto self = shared_from_this();
  session_->Request(Value::MakeMap().Set("type", "GetAgentState").Set("agent_id", id_),
                    [self, done](Result<Value> reply) {
                      if (!reply.ok()) return done.Set(reply.error());
                      if (reply->GetString("state") == "idle") {
                        const Value* last = reply->Find("last_result");
                        std::optional<TurnResult> result;
                        if (last != nullptr && last->IsMap()) result = ResultFromWire(*last);
                        return done.Set(result);
                      }
                      std::lock_guard<std::mutex> lock(self->mutex_);
                      self->completions_.push_back(done);
                    });
  return done.GetFuture();
}

// --- host side -------------------------------------------------------------------------------

void AgentCore::EditCallbacks(const std::function<void(Callbacks&)>& edit) {
  std::lock_guard<std::mutex> lock(mutex_);
  edit(callbacks_);
}

void AgentCore::RegisterTool(std::string name, ToolHandler handler) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (handler) {
    tools_[std::move(name)] = std::move(handler);
  } else {
    tools_.erase(name);
  }
}

bool AgentCore::HasPausedToolBatch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_batch_.has_value();
}

std::optional<TurnResult> AgentCore::LastResult() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_result_;
}

}  // namespace turnloom::detail
