// GraphDescription: the builder and its wire form.
#include "turnloom/graph.hpp"

namespace turnloom {

GraphDescription& GraphDescription::AddNode(std::string name, NodeParams params) {
  nodes_.emplace_back(std::move(name), std::move(params));
  return *this;
}
GraphDescription& GraphDescription::AddPause(std::string name, PauseParams params) {
  return AddNode(std::move(name), std::move(params));
}
GraphDescription& GraphDescription::AddGenerate(std::string name, GenerateParams params) {
  return AddNode(std::move(name), std::move(params));
}
GraphDescription& GraphDescription::AddCannedResponse(std::string name,
                                                      CannedResponseParams params) {
  return AddNode(std::move(name), std::move(params));
}
GraphDescription& GraphDescription::AddToolCall(std::string name, ToolCallParams params) {
  return AddNode(std::move(name), std::move(params));
}
GraphDescription& GraphDescription::SetStartNode(std::string name) {
  start_node_ = std::move(name);
  return *this;
}
GraphDescription& GraphDescription::SetDefaultModelName(std::string name) {
  default_model_name_ = std::move(name);
  return *this;
}

Value GraphDescription::ToValue() const {
  Value nodes = Value::MakeArray();
  for (const auto& [name, params] : nodes_) {
    nodes.Push(Value::MakeMap()
                   .Set("name", name)
                   .Set("type", NodeTypeName(params))
                   .Set("params", turnloom::ToValue(params)));
  }
  return Value::MakeMap()
      .Set("nodes", std::move(nodes))
      .Set("start_node", start_node_)
      .Set("default_model_name", default_model_name_);
}

}  // namespace turnloom
