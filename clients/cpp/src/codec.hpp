// Frames <-> Values (docs/protocol.md section 1): a 4-byte little-endian length, then one
// msgpack map. msgpack-cxx does the msgpack; this is only the framing and the error values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "turnloom/error.hpp"
#include "turnloom/value.hpp"

namespace turnloom::detail {

inline constexpr std::size_t kFrameHeaderBytes = 4;
inline constexpr std::size_t kDefaultMaxFrameBytes = 1048576;

// The whole frame (header + body); 5003 FrameTooLarge when the body exceeds `max_body_bytes`
// (checked before anything is sent, so the session never sees the frame).
Result<std::string> EncodeFrame(const Value& message, std::size_t max_body_bytes);

// One frame body: exactly one msgpack map with string keys, no trailing bytes, no bin/ext
// (5001 MalformedMessage otherwise). Never throws, whatever the bytes.
Result<Value> DecodeBody(const char* data, std::size_t size) noexcept;

inline std::uint32_t ReadFrameLength(const unsigned char* header) noexcept {
  return static_cast<std::uint32_t>(header[0]) | (static_cast<std::uint32_t>(header[1]) << 8) |
         (static_cast<std::uint32_t>(header[2]) << 16) |
         (static_cast<std::uint32_t>(header[3]) << 24);
}

}  // namespace turnloom::detail
