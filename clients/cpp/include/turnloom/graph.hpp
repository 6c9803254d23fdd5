// GraphDescription: an agent's graph, built in C++ and sent with Client::CreateAgent.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "turnloom/params.hpp"
#include "turnloom/value.hpp"

namespace turnloom {

class GraphDescription {
 public:
  GraphDescription& AddNode(std::string name, NodeParams params);
  GraphDescription& AddPause(std::string name, PauseParams params = {});
  GraphDescription& AddGenerate(std::string name, GenerateParams params = {});
  GraphDescription& AddCannedResponse(std::string name, CannedResponseParams params);
  GraphDescription& AddToolCall(std::string name, ToolCallParams params);
  GraphDescription& SetStartNode(std::string name);
  GraphDescription& SetDefaultModelName(std::string name);

  // The protocol's graph map (docs/protocol.md section 7).
  Value ToValue() const;

 private:
  std::vector<std::pair<std::string, NodeParams>> nodes_;
  std::string start_node_;
  std::string default_model_name_;
};

}  // namespace turnloom
