// msgpack -> Value with msgpack-cxx's visitor parser (msgpack::parse + a visitor).
//
// Why a visitor and why this file alone is built with -fexceptions: msgpack-cxx has no
// exception-free mode (msgpack/msgpack-c#1041). Its object/zone API throws on malformed input;
// the visitor API instead reports malformed or truncated input through parse_error /
// insufficient_bytes, which this visitor records as a value. What can still throw inside the
// parser is allocation failure (std::bad_alloc) and an ext32 size overflow; the catch-all at
// the bottom turns those into 5001 as well, so no exception ever leaves this file and the rest
// of the library (and the application) can be built with -fno-exceptions.
#include <msgpack.hpp>  // the whole library: this file is built with exceptions anyway

#include "codec.hpp"

namespace turnloom::detail {

namespace {

// Deeper than any frame of the protocol; it bounds the recursion of Value's destructor.
constexpr std::size_t kMaxDepth = 64;

class ValueBuilder : public msgpack::null_visitor {
 public:
  bool visit_nil() { return Put(Value()); }
  bool visit_boolean(bool v) { return Put(Value(v)); }
  bool visit_positive_integer(std::uint64_t v) { return Put(Value(v)); }
  bool visit_negative_integer(std::int64_t v) { return Put(Value(v)); }
  bool visit_float32(float v) { return Put(Value(static_cast<double>(v))); }
  bool visit_float64(double v) { return Put(Value(v)); }
  bool visit_str(const char* v, std::uint32_t size) {
    return Put(Value(std::string_view(v, size)));
  }
  bool visit_bin(const char*, std::uint32_t) { return Refuse("a bin value"); }
  bool visit_ext(const char*, std::uint32_t) { return Refuse("an ext value"); }

  bool start_array(std::uint32_t) { return Open(Value::MakeArray()); }
  bool end_array() { return Close(); }
  bool start_map(std::uint32_t) { return Open(Value::MakeMap()); }
  bool start_map_key() {
    in_key_ = true;
    return true;
  }
  bool end_map_key() {
    in_key_ = false;
    return true;
  }
  bool end_map() { return Close(); }

  void parse_error(std::size_t, std::size_t offset) {
    error_ = "not valid msgpack (at byte " + std::to_string(offset) + ")";
  }
  void insufficient_bytes(std::size_t, std::size_t) { error_ = "truncated msgpack"; }

  Value& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  // A finished value: the root, an array item, a map key (must be a string) or a map value.
  bool Put(Value v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return true;
    }
    Frame& top = stack_.back();
    if (top.value.IsArray()) {
      top.value.AsArray()->push_back(std::move(v));
    } else if (in_key_) {
      const std::string* key = v.AsString();
      if (key == nullptr) return Refuse("a map key that is not a string");
      top.key = *key;
    } else {
      top.value.AsMap()->emplace_back(std::move(top.key), std::move(v));
    }
    return true;
  }
  bool Open(Value container) {
    if (in_key_) return Refuse("a map key that is not a string");
    if (stack_.size() >= kMaxDepth) return Refuse("nesting deeper than 64");
    stack_.push_back(Frame{std::move(container), {}});
    return true;
  }
  bool Close() {
    Value done = std::move(stack_.back().value);
    stack_.pop_back();
    return Put(std::move(done));
  }
  bool Refuse(const char* what) {
    error_ = std::string(what) + " (the protocol allows none)";
    return false;
  }

  struct Frame {
    Value value;
    std::string key;  // the key whose value comes next (maps)
  };
  std::vector<Frame> stack_;
  Value root_;
  bool in_key_ = false;
  std::string error_;
};

}  // namespace

Result<Value> DecodeBody(const char* data, std::size_t size) noexcept {
  try {
    ValueBuilder builder;
    std::size_t offset = 0;
    const bool parsed = msgpack::parse(data, size, offset, builder);
    if (!parsed || !builder.error().empty()) {
      return Error(ErrorCode::MalformedMessage,
                   "frame body: " + (builder.error().empty() ? std::string("not valid msgpack")
                                                             : builder.error()));
    }
    if (offset != size) {
      return Error(ErrorCode::MalformedMessage,
                   "frame body: " + std::to_string(size - offset) + " bytes after the map");
    }
    if (!builder.root().IsMap()) {
      return Error(ErrorCode::MalformedMessage, "frame body: not a msgpack map");
    }
    return std::move(builder.root());
  } catch (...) {  // bad_alloc, ext size overflow: see the comment at the top
    return Error(ErrorCode::MalformedMessage, "frame body: could not be decoded");
  }
}

}  // namespace turnloom::detail
