// Value: the data a msgpack frame can hold (nil, bool, integers, floats, strings, arrays, maps
// with string keys), as the protocol uses it. Params, graphs and frames are built from it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace turnloom {

class Value {
 public:
  enum class Kind { Nil, Bool, Int, UInt, Float, String, Array, Map };
  using Array = std::vector<Value>;
  // A map keeps the order its fields were set or received in; keys are unique.
  using Map = std::vector<std::pair<std::string, Value>>;

  Value() = default;
  Value(std::nullptr_t) {}  // NOLINT
  Value(bool b) : kind_(Kind::Bool), bool_(b) {}  // NOLINT
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool> &&
                                          !std::is_same_v<I, char>, int> = 0>
  Value(I i) {  // NOLINT
    if constexpr (std::is_signed_v<I>) {
      kind_ = Kind::Int;
      int_ = static_cast<std::int64_t>(i);
    } else if (static_cast<std::uint64_t>(i) > static_cast<std::uint64_t>(INT64_MAX)) {
      kind_ = Kind::UInt;  // only integers above INT64_MAX are kept unsigned
      uint_ = static_cast<std::uint64_t>(i);
    } else {
      kind_ = Kind::Int;
      int_ = static_cast<std::int64_t>(i);
    }
  }
  Value(double d) : kind_(Kind::Float), float_(d) {}  // NOLINT
  Value(const char* s) : kind_(Kind::String), string_(s) {}  // NOLINT
  Value(std::string s) : kind_(Kind::String), string_(std::move(s)) {}  // NOLINT
  Value(std::string_view s) : kind_(Kind::String), string_(s) {}  // NOLINT
  Value(Array a) : kind_(Kind::Array), array_(std::move(a)) {}  // NOLINT
  Value(Map m) : kind_(Kind::Map), map_(std::move(m)) {}  // NOLINT

  static Value MakeMap() { return Value(Map{}); }
  static Value MakeArray() { return Value(Array{}); }

  Kind kind() const noexcept { return kind_; }
  bool IsNil() const noexcept { return kind_ == Kind::Nil; }
  bool IsBool() const noexcept { return kind_ == Kind::Bool; }
  bool IsInt() const noexcept { return kind_ == Kind::Int || kind_ == Kind::UInt; }
  bool IsFloat() const noexcept { return kind_ == Kind::Float; }
  bool IsString() const noexcept { return kind_ == Kind::String; }
  bool IsArray() const noexcept { return kind_ == Kind::Array; }
  bool IsMap() const noexcept { return kind_ == Kind::Map; }

  // Typed reads: nullopt / nullptr when the value is of another kind.
  std::optional<bool> AsBool() const noexcept;
  std::optional<std::int64_t> AsInt() const noexcept;  // an integer that fits int64
  std::optional<std::uint64_t> AsUInt() const noexcept;  // a non-negative integer
  std::optional<double> AsDouble() const noexcept;     // a float, or an integer
  const std::string* AsString() const noexcept;
  const Array* AsArray() const noexcept;
  Array* AsArray() noexcept;
  const Map* AsMap() const noexcept;
  Map* AsMap() noexcept;

  // Map access. Find: the field, or nullptr (also when this is not a map).
  const Value* Find(std::string_view key) const noexcept;
  // Set: adds or replaces a field (a nil value becomes a map first); returns *this to chain.
  Value& Set(std::string key, Value value);
  // Push: appends to an array (a nil value becomes an array first).
  Value& Push(Value value);

  // Convenience reads of a map field with a fallback for a missing or mistyped one.
  std::string GetString(std::string_view key, std::string_view fallback = "") const;
  std::int64_t GetInt(std::string_view key, std::int64_t fallback = 0) const;
  double GetDouble(std::string_view key, double fallback = 0.0) const;
  bool GetBool(std::string_view key, bool fallback = false) const;

  bool operator==(const Value& other) const noexcept;
  bool operator!=(const Value& other) const noexcept { return !(*this == other); }

  // Compact JSON-like text, for logs and messages (not a JSON encoder).
  std::string ToDebugString() const;

 private:
  Kind kind_ = Kind::Nil;
  bool bool_ = false;
  std::int64_t int_ = 0;
  std::uint64_t uint_ = 0;
  double float_ = 0.0;
  std::string string_;
  Array array_;
  Map map_;
};

}  // namespace turnloom
