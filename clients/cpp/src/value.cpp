// Value's accessors and its debug rendering.
#include "turnloom/value.hpp"

#include <cstdio>

namespace turnloom {

std::optional<bool> Value::AsBool() const noexcept {
  if (kind_ == Kind::Bool) return bool_;
  return std::nullopt;
}

std::optional<std::int64_t> Value::AsInt() const noexcept {
  if (kind_ == Kind::Int) return int_;
  return std::nullopt;  // a UInt is above INT64_MAX by construction
}

std::optional<std::uint64_t> Value::AsUInt() const noexcept {
  if (kind_ == Kind::UInt) return uint_;
  if (kind_ == Kind::Int && int_ >= 0) return static_cast<std::uint64_t>(int_);
  return std::nullopt;
}

std::optional<double> Value::AsDouble() const noexcept {
  if (kind_ == Kind::Float) return float_;
  if (kind_ == Kind::Int) return static_cast<double>(int_);
  if (kind_ == Kind::UInt) return static_cast<double>(uint_);
  return std::nullopt;
}

const std::string* Value::AsString() const noexcept {
  return kind_ == Kind::String ? &string_ : nullptr;
}
const Value::Array* Value::AsArray() const noexcept {
  return kind_ == Kind::Array ? &array_ : nullptr;
}
Value::Array* Value::AsArray() noexcept { return kind_ == Kind::Array ? &array_ : nullptr; }
const Value::Map* Value::AsMap() const noexcept { return kind_ == Kind::Map ? &map_ : nullptr; }
Value::Map* Value::AsMap() noexcept { return kind_ == Kind::Map ? &map_ : nullptr; }

const Value* Value::Find(std::string_view key) const noexcept {
  if (kind_ != Kind::Map) return nullptr;
  for (const auto& [name, value] : map_) {
    if (name == key) return &value;
  }
  return nullptr;
}

Value& Value::Set(std::string key, Value value) {
  if (kind_ == Kind::Nil) kind_ = Kind::Map;
  for (auto& field : map_) {
    if (field.first == key) {
      field.second = std::move(value);
      return *this;
    }
  }
  map_.emplace_back(std::move(key), std::move(value));
  return *this;
}

Value& Value::Push(Value value) {
  if (kind_ == Kind::Nil) kind_ = Kind::Array;
  array_.push_back(std::move(value));
  return *this;
}

std::string Value::GetString(std::string_view key, std::string_view fallback) const {
  const Value* v = Find(key);
  const std::string* s = v ? v->AsString() : nullptr;
  return s ? *s : std::string(fallback);
}

std::int64_t Value::GetInt(std::string_view key, std::int64_t fallback) const {
  const Value* v = Find(key);
  auto i = v ? v->AsInt() : std::nullopt;
  return i ? *i : fallback;
}

double Value::GetDouble(std::string_view key, double fallback) const {
  const Value* v = Find(key);
  auto d = v ? v->AsDouble() : std::nullopt;
  return d ? *d : fallback;
}

bool Value::GetBool(std::string_view key, bool fallback) const {
  const Value* v = Find(key);
  auto b = v ? v->AsBool() : std::nullopt;
  return b ? *b : fallback;
}

bool Value::operator==(const Value& other) const noexcept {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Nil: return true;
    case Kind::Bool: return bool_ == other.bool_;
    case Kind::Int: return int_ == other.int_;
    case Kind::UInt: return uint_ == other.uint_;
    case Kind::Float: return float_ == other.float_;
    case Kind::String: return string_ == other.string_;
    case Kind::Array: return array_ == other.array_;
    case Kind::Map: return map_ == other.map_;
  }
  return false;
}

static void AppendQuoted(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string Value::ToDebugString() const {
  std::string out;
  switch (kind_) {
    case Kind::Nil: return "null";
    case Kind::Bool: return bool_ ? "true" : "false";
    case Kind::Int: return std::to_string(int_);
    case Kind::UInt: return std::to_string(uint_);
    case Kind::Float: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", float_);
      return buf;
    }
    case Kind::String: AppendQuoted(out, string_); return out;
    case Kind::Array:
      out += '[';
      for (std::size_t i = 0; i < array_.size(); ++i) {
        if (i) out += ", ";
        out += array_[i].ToDebugString();
      }
      return out + ']';
    case Kind::Map:
      out += '{';
      for (std::size_t i = 0; i < map_.size(); ++i) {
        if (i) out += ", ";
        AppendQuoted(out, map_[i].first);
        out += ": " + map_[i].second.ToDebugString();
      }
      return out + '}';
  }
  return out;
}

}  // namespace turnloom
