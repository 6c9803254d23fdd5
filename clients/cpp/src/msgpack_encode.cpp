// Value -> msgpack with msgpack-cxx's packer. Only the packer's raw calls are used (pack_map,
// pack_str, ...): they do not throw, so this file builds with -fno-exceptions. The output
// stream is a std::string (msgpack's sbuffer throws on allocation failure).
#include <msgpack/pack.hpp>

#include "codec.hpp"

namespace turnloom::detail {

namespace {

// The Stream concept msgpack::packer writes to.
struct StringStream {
  std::string bytes;
  void write(const char* data, std::size_t size) { bytes.append(data, size); }
};

void Pack(msgpack::packer<StringStream>& out, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Nil: out.pack_nil(); return;
    case Value::Kind::Bool:
      if (*value.AsBool()) out.pack_true(); else out.pack_false();
      return;
    case Value::Kind::Int: out.pack_int64(*value.AsInt()); return;
    case Value::Kind::UInt: out.pack_uint64(*value.AsUInt()); return;
    case Value::Kind::Float: out.pack_double(*value.AsDouble()); return;
    case Value::Kind::String: {
      const std::string& s = *value.AsString();
      out.pack_str(static_cast<std::uint32_t>(s.size()));
      out.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
      return;
    }
    case Value::Kind::Array: {
      const Value::Array& items = *value.AsArray();
      out.pack_array(static_cast<std::uint32_t>(items.size()));
      for (const Value& item : items) Pack(out, item);
      return;
    }
    case Value::Kind::Map: {
      const Value::Map& fields = *value.AsMap();
      out.pack_map(static_cast<std::uint32_t>(fields.size()));
      for (const auto& [key, item] : fields) {
        out.pack_str(static_cast<std::uint32_t>(key.size()));
        out.pack_str_body(key.data(), static_cast<std::uint32_t>(key.size()));
        Pack(out, item);
      }
      return;
    }
  }
}

}  // namespace

Result<std::string> EncodeFrame(const Value& message, std::size_t max_body_bytes) {
  StringStream stream;
  stream.bytes.assign(kFrameHeaderBytes, '\0');  // the length, filled in below
  msgpack::packer<StringStream> packer(stream);
  Pack(packer, message);
  const std::size_t body = stream.bytes.size() - kFrameHeaderBytes;
  if (body > max_body_bytes) {
    return Error(ErrorCode::FrameTooLarge,
                 message.GetString("type", "request") + " not sent: its frame would be " +
                     std::to_string(body) + " bytes, over the limit of " +
                     std::to_string(max_body_bytes) + " (max_frame_bytes)");
  }
  for (std::size_t i = 0; i < kFrameHeaderBytes; ++i) {
    stream.bytes[i] = static_cast<char>((body >> (8 * i)) & 0xff);
  }
  return std::move(stream.bytes);
}

}  // namespace turnloom::detail
