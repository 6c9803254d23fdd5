// Agent: the public face of AgentCore — the blocking forms wait on the *Async ones.
#include "turnloom/agent.hpp"

#include "agent_core.hpp"

namespace turnloom {

namespace {

Error NoAgent(const char* operation) {
  return Error(ErrorCode::InvalidAgentId,
               std::string(operation) + " refused: this Agent handle is empty (not created)");
}

// A blocking call: refused at once on the reader thread (before anything is sent, so it has
// no effect), else the async form waited for within the call's limit.
template <class T, class Start>
Result<T> Block(detail::AgentCore* core, const char* operation, milliseconds timeout,
                Start start) {
  if (core == nullptr) return NoAgent(operation);
  if (core->session().OnReaderThread()) return detail::BlockingCallError(operation);
  const milliseconds limit = core->session().Limit(timeout);
  Result<T> answer = start().Get(limit);
  if (!answer.ok() && answer.error().Is(ErrorCode::Timeout)) {
    return detail::TimeoutError(operation, limit);
  }
  return answer;
}

template <class T>
Future<T> Refused(const char* operation) {
  return ReadyFuture<T>(NoAgent(operation));
}

}  // namespace

Agent::Agent(std::shared_ptr<detail::AgentCore> core) : core_(std::move(core)) {}

std::int64_t Agent::id() const noexcept { return core_ ? core_->id() : 0; }

Result<Step> Agent::SendMessage(std::string_view text, milliseconds timeout) {
  return Block<Step>(core_.get(), "SendMessage", timeout, [&] { return SendMessageAsync(text); });
}
Future<Step> Agent::SendMessageAsync(std::string_view text) {
  if (!core_) return Refused<Step>("SendMessageAsync");
  return core_->SendMessageAsync(text);
}

Result<Step> Agent::Resume(std::string_view resume_node, milliseconds timeout) {
  return Block<Step>(core_.get(), "Resume", timeout, [&] { return ResumeAsync(resume_node); });
}
Future<Step> Agent::ResumeAsync(std::string_view resume_node) {
  if (!core_) return Refused<Step>("ResumeAsync");
  return core_->ResumeAsync(resume_node, {});
}

Result<Step> Agent::ResumeWithToolResults(std::vector<ToolResult> results, milliseconds timeout) {
  return Block<Step>(core_.get(), "ResumeWithToolResults", timeout,
                     [&] { return ResumeWithToolResultsAsync(std::move(results)); });
}
Future<Step> Agent::ResumeWithToolResultsAsync(std::vector<ToolResult> results) {
  if (!core_) return Refused<Step>("ResumeWithToolResultsAsync");
  return core_->ResumeAsync("", std::move(results));
}
Result<Step> Agent::ResumeWithToolResult(ToolResult result, milliseconds timeout) {
  return ResumeWithToolResults({std::move(result)}, timeout);
}
Future<Step> Agent::ResumeWithToolResultAsync(ToolResult result) {
  return ResumeWithToolResultsAsync({std::move(result)});
}

Result<void> Agent::SetInputPolicy(InputPolicy policy, milliseconds timeout) {
  return Block<void>(core_.get(), "SetInputPolicy", timeout,
                     [&] { return SetInputPolicyAsync(policy); });
}
Future<void> Agent::SetInputPolicyAsync(InputPolicy policy) {
  if (!core_) return Refused<void>("SetInputPolicyAsync");
  return core_->SetInputPolicyAsync(policy);
}

InputPolicy Agent::input_policy() const {
  return core_ ? core_->input_policy() : InputPolicy::Reject;
}

Result<SlotInfo> Agent::Save(std::string_view slot, milliseconds timeout) {
  return Block<SlotInfo>(core_.get(), "Save", timeout, [&] { return SaveAsync(slot); });
}
Future<SlotInfo> Agent::SaveAsync(std::string_view slot) {
  if (!core_) return Refused<SlotInfo>("SaveAsync");
  return core_->SaveAsync(slot);
}

Result<void> Agent::ChangeParams(std::string_view node_name, NodeParams params,
                                 milliseconds timeout) {
  return Block<void>(core_.get(), "ChangeParams", timeout,
                     [&] { return ChangeParamsAsync(node_name, std::move(params)); });
}
Future<void> Agent::ChangeParamsAsync(std::string_view node_name, NodeParams params) {
  if (!core_) return Refused<void>("ChangeParamsAsync");
  return core_->ChangeParamsAsync(node_name, ToValue(params), NodeTypeName(params));
}
Result<void> Agent::ChangeParamFields(std::string_view node_name, Value fields,
                                      milliseconds timeout) {
  return Block<void>(core_.get(), "ChangeParamFields", timeout,
                     [&] { return ChangeParamFieldsAsync(node_name, std::move(fields)); });
}
Future<void> Agent::ChangeParamFieldsAsync(std::string_view node_name, Value fields) {
  if (!core_) return Refused<void>("ChangeParamFieldsAsync");
  return core_->ChangeParamsAsync(node_name, std::move(fields), nullptr);
}

Result<NodeParams> Agent::GetParams(std::string_view node_name, milliseconds timeout) {
  return Block<NodeParams>(core_.get(), "GetParams", timeout,
                           [&] { return GetParamsAsync(node_name); });
}
Future<NodeParams> Agent::GetParamsAsync(std::string_view node_name) {
  if (!core_) return Refused<NodeParams>("GetParamsAsync");
  return core_->GetParamsAsync(node_name);
}

Result<bool> Agent::Cancel(milliseconds timeout) {
  return Block<bool>(core_.get(), "Cancel", timeout, [&] { return CancelAsync(); });
}
Future<bool> Agent::CancelAsync() {
  if (!core_) return Refused<bool>("CancelAsync");
  return core_->CancelAsync();
}

Result<void> Agent::Destroy(milliseconds timeout) {
  return Block<void>(core_.get(), "Destroy", timeout, [&] { return DestroyAsync(); });
}
Future<void> Agent::DestroyAsync() {
  if (!core_) return Refused<void>("DestroyAsync");
  return core_->DestroyAsync();
}

Result<Step> Agent::Wait(milliseconds timeout) {
  return Block<Step>(core_.get(), "Wait", timeout, [&] { return WaitAsync(); });
}
Future<Step> Agent::WaitAsync() {
  if (!core_) return Refused<Step>("WaitAsync");
  return core_->WaitAsync();
}
Result<std::optional<TurnResult>> Agent::WaitComplete(milliseconds timeout) {
  return Block<std::optional<TurnResult>>(core_.get(), "WaitComplete", timeout,
                                          [&] { return WaitCompleteAsync(); });
}
Future<std::optional<TurnResult>> Agent::WaitCompleteAsync() {
  if (!core_) return Refused<std::optional<TurnResult>>("WaitCompleteAsync");
  return core_->WaitCompleteAsync();
}

void Agent::SetOnPaused(PausedCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.paused = std::move(callback); });
}
void Agent::SetOnResumed(ResumedCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.resumed = std::move(callback); });
}
void Agent::SetOnToolCallWithId(ToolCallWithIdCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.tool_call_with_id = std::move(callback); });
}
void Agent::SetOnToolCallEvent(ToolCallEventCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.tool_call_event = std::move(callback); });
}
void Agent::SetOnAnswerText(AnswerTextCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.answer_text = std::move(callback); });
}
void Agent::SetOnTurnComplete(TurnCompleteCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.turn_complete = std::move(callback); });
}
void Agent::SetOnMessage(MessageCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.message = std::move(callback); });
}
void Agent::SetOnError(AgentErrorCallback callback) {
  if (core_) core_->EditCallbacks([&](auto& c) { c.error = std::move(callback); });
}

void Agent::RegisterTool(std::string name, ToolHandler handler) {
  if (core_) core_->RegisterTool(std::move(name), std::move(handler));
}
bool Agent::HasPausedToolBatch() const { return core_ && core_->HasPausedToolBatch(); }
Result<Step> Agent::RetryPausedToolBatch(milliseconds timeout) {
  return Block<Step>(core_.get(), "RetryPausedToolBatch", timeout,
                     [&] { return RetryPausedToolBatchAsync(); });
}
Future<Step> Agent::RetryPausedToolBatchAsync() {
  if (!core_) return Refused<Step>("RetryPausedToolBatchAsync");
  return core_->RetryPausedToolBatchAsync();
}

std::optional<TurnResult> Agent::LastResult() const {
  return core_ ? core_->LastResult() : std::nullopt;
}

}  // namespace turnloom
