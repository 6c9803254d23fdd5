// Node params <-> the protocol's params maps. Each params struct lists its fields once
// (Fields below) and the same list drives both directions, so they cannot drift apart.
#include <cstring>

#include "turnloom/params.hpp"

namespace turnloom {

namespace {

template <class E, std::size_t N>
struct EnumNames {
  const char* names[N];
  const char* Of(E v) const noexcept { return names[static_cast<std::size_t>(v)]; }
  bool Parse(const std::string& s, E& out) const noexcept {
    for (std::size_t i = 0; i < N; ++i) {
      if (s == names[i]) {
        out = static_cast<E>(i);
        return true;
      }
    }
    return false;
  }
};

// In the enums' declaration order.
constexpr EnumNames<Placement, 5> kPlacement{{"in_place_of_user", "before_user_as_user",
                                              "before_user_as_system", "after_user_as_user",
                                              "after_user_as_system"}};
constexpr EnumNames<Selection, 3> kSelection{{"first", "random", "cycle"}};
constexpr EnumNames<ToolCallDisposition, 7> kDisposition{
    {"route_only", "acknowledge", "notify", "notify_and_acknowledge", "pause",
     "pause_and_acknowledge", "await_result"}};
constexpr EnumNames<ToolCallMode, 2> kMode{{"detect_only", "call_or_answer"}};

const auto& NamesOf(Placement) { return kPlacement; }
const auto& NamesOf(Selection) { return kSelection; }
const auto& NamesOf(ToolCallDisposition) { return kDisposition; }
const auto& NamesOf(ToolCallMode) { return kMode; }

// --- the field lists -----------------------------------------------------------------------

template <class V> void Fields(V& v, SamplingParams& p) {
  v("temperature", p.temperature);
  v("top_p", p.top_p);
  v("top_k", p.top_k);
  v("min_p", p.min_p);
  v("repeat_penalty", p.repeat_penalty);
  v("max_tokens", p.max_tokens);
  v("seed", p.seed);
  v("timeout_ms", p.timeout_ms);
}
template <class V> void Fields(V& v, ToolParamDefinition& p) {
  v("name", p.name);
  v("type", p.type);
  v("description", p.description);
  v("enum", p.enum_values);
}
template <class V> void Fields(V& v, ToolDefinition& p) {
  v("name", p.name);
  v("description", p.description);
  v("parameters", p.parameters);
}
template <class V> void Fields(V& v, PauseParams& p) {
  v("pause_timeout_ms", p.pause_timeout_ms);
  v("default_exit", p.default_exit);
  v("timeout_exit", p.timeout_exit);
}
template <class V> void Fields(V& v, GenerateParams& p) {
  v("system_prompt", p.system_prompt);
  v("template", p.template_);
  v("placement", p.placement);
  v("stream", p.stream);
  v("model_name", p.model_name);
  v("sampling", p.sampling);
  v("default_exit", p.default_exit);
}
template <class V> void Fields(V& v, CannedResponseParams& p) {
  v("lines", p.lines);
  v("selection", p.selection);
  v("default_exit", p.default_exit);
}
template <class V> void Fields(V& v, ToolCallParams& p) {
  v("tools", p.tools);
  v("disposition", p.disposition);
  v("mode", p.mode);
  v("system_prompt", p.system_prompt);
  v("acknowledge_text", p.acknowledge_text);
  v("model_name", p.model_name);
  v("sampling", p.sampling);
  v("pause_timeout_ms", p.pause_timeout_ms);
  v("tool_called_exit", p.tool_called_exit);
  v("no_tool_called_exit", p.no_tool_called_exit);
  v("timeout_exit", p.timeout_exit);
}

// --- writing -------------------------------------------------------------------------------

Value Write(const std::string& s) { return Value(s); }
Value Write(bool b) { return Value(b); }
Value Write(std::int64_t i) { return Value(i); }
Value Write(double d) { return Value(d); }
template <class T> Value Write(const std::vector<T>& items);
template <class T> Value Write(const T& value);

struct Writer {
  Value out = Value::MakeMap();
  template <class T> void operator()(const char* name, T& field) { out.Set(name, Write(field)); }
};

template <class T> Value Write(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return Value(NamesOf(value).Of(value));
  } else {
    Writer w;
    Fields(w, const_cast<T&>(value));  // Fields only reads through a Writer
    return std::move(w.out);
  }
}
template <class T> Value Write(const std::vector<T>& items) {
  Value out = Value::MakeArray();
  for (const T& item : items) out.Push(Write(item));
  return out;
}

// --- reading -------------------------------------------------------------------------------

bool Read(const Value& v, std::string& out) {
  const std::string* s = v.AsString();
  if (s) out = *s;
  return s != nullptr;
}
bool Read(const Value& v, bool& out) {
  auto b = v.AsBool();
  if (b) out = *b;
  return b.has_value();
}
bool Read(const Value& v, std::int64_t& out) {
  auto i = v.AsInt();
  if (i) out = *i;
  return i.has_value();
}
bool Read(const Value& v, double& out) {
  auto d = v.AsDouble();
  if (d) out = *d;
  return d.has_value();
}
template <class T> bool Read(const Value& v, std::vector<T>& out);
template <class T> bool Read(const Value& v, T& out);

// Reads the fields a map has; a missing field keeps its default, a mistyped one is an error.
struct Reader {
  const Value& in;
  std::string error;
  template <class T> void operator()(const char* name, T& field) {
    const Value* v = in.Find(name);
    if (v != nullptr && error.empty() && !Read(*v, field)) {
      error = std::string("field '") + name + "' has an unexpected type or value: " +
              v->ToDebugString();
    }
  }
};

template <class T> bool Read(const Value& v, T& out) {
  if constexpr (std::is_enum_v<T>) {
    const std::string* s = v.AsString();
    return s != nullptr && NamesOf(out).Parse(*s, out);
  } else {
    if (!v.IsMap()) return false;
    Reader r{v, {}};
    Fields(r, out);
    return r.error.empty();
  }
}
template <class T> bool Read(const Value& v, std::vector<T>& out) {
  const Value::Array* items = v.AsArray();
  if (items == nullptr) return false;
  out.clear();
  for (const Value& item : *items) {
    T t{};
    if (!Read(item, t)) return false;
    out.push_back(std::move(t));
  }
  return true;
}

template <class P>
Result<NodeParams> ReadNode(std::string_view node_type, const Value& params) {
  P p;
  Reader r{params, {}};
  Fields(r, p);
  if (!r.error.empty()) {
    return Error(ErrorCode::MalformedMessage, std::string(node_type) + " params: " + r.error);
  }
  return NodeParams(std::move(p));
}

}  // namespace

const char* ToString(Placement v) noexcept { return kPlacement.Of(v); }
const char* ToString(Selection v) noexcept { return kSelection.Of(v); }
const char* ToString(ToolCallDisposition v) noexcept { return kDisposition.Of(v); }
const char* ToString(ToolCallMode v) noexcept { return kMode.Of(v); }

const char* NodeTypeName(const NodeParams& params) noexcept {
  static constexpr const char* kNames[] = {"Pause", "Generate", "CannedResponse", "ToolCall"};
  return kNames[params.index()];
}

Value ToValue(const NodeParams& params) {
  return std::visit([](const auto& p) { return Write(p); }, params);
}

Result<NodeParams> NodeParamsFromValue(std::string_view node_type, const Value& params) {
  if (!params.IsMap()) return Error(ErrorCode::MalformedMessage, "params is not a map");
  if (node_type == "Pause") return ReadNode<PauseParams>(node_type, params);
  if (node_type == "Generate") return ReadNode<GenerateParams>(node_type, params);
  if (node_type == "CannedResponse") return ReadNode<CannedResponseParams>(node_type, params);
  if (node_type == "ToolCall") return ReadNode<ToolCallParams>(node_type, params);
  return Error(ErrorCode::MalformedMessage,
               "unknown node type '" + std::string(node_type) + "' (a newer server?)");
}

}  // namespace turnloom
