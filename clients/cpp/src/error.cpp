// Error names and the abort taken when a failed Result's value is used.
#include "turnloom/error.hpp"

namespace turnloom {

const char* ErrorCodeName(int code) noexcept {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::Ok: return "Ok";
    case ErrorCode::ConnectionFailed: return "ConnectionFailed";
    case ErrorCode::ConnectionDropped: return "ConnectionDropped";
    case ErrorCode::Timeout: return "Timeout";
    case ErrorCode::BlockingCallInCallback: return "BlockingCallInCallback";
    case ErrorCode::NoPausedToolBatch: return "NoPausedToolBatch";
    case ErrorCode::ServerShuttingDown: return "ServerShuttingDown";
    case ErrorCode::SessionNotReady: return "SessionNotReady";
    case ErrorCode::SessionLimitExceeded: return "SessionLimitExceeded";
    case ErrorCode::Unauthorized: return "Unauthorized";
    case ErrorCode::InvalidAgentId: return "InvalidAgentId";
    case ErrorCode::AgentAlreadyDestroyed: return "AgentAlreadyDestroyed";
    case ErrorCode::GraphCompilationFailed: return "GraphCompilationFailed";
    case ErrorCode::AgentBusy: return "AgentBusy";
    case ErrorCode::UnknownNode: return "UnknownNode";
    case ErrorCode::ParamNotMutable: return "ParamNotMutable";
    case ErrorCode::InvalidParamValue: return "InvalidParamValue";
    case ErrorCode::InvalidExitTarget: return "InvalidExitTarget";
    case ErrorCode::AgentNotPaused: return "AgentNotPaused";
    case ErrorCode::InvalidToolResults: return "InvalidToolResults";
    case ErrorCode::InferenceFailed: return "InferenceFailed";
    case ErrorCode::InferenceTimeout: return "InferenceTimeout";
    case ErrorCode::MaxStepsExceeded: return "MaxStepsExceeded";
    case ErrorCode::MalformedMessage: return "MalformedMessage";
    case ErrorCode::UnknownMessageType: return "UnknownMessageType";
    case ErrorCode::FrameTooLarge: return "FrameTooLarge";
    case ErrorCode::ProtocolVersionMismatch: return "ProtocolVersionMismatch";
  }
  return "Unknown";
}

std::string Error::ToString() const {
  return std::to_string(code) + " " + ErrorCodeName(code) + ": " + message;
}

namespace detail {
void AbortOnBadAccess(const Error& error) noexcept {
  std::fprintf(stderr, "turnloom: value() of a failed Result (%s)\n", error.ToString().c_str());
  std::abort();
}
}  // namespace detail

}  // namespace turnloom
