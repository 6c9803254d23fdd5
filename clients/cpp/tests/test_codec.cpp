// The frame codec (src/codec.hpp): a round trip, and malformed bodies reported as 5001 values
// (never an exception, never a crash), hand-written bytes per the msgpack spec.
#include <string>

#include "../src/codec.hpp"
#include "check.hpp"

using namespace turnloom;

namespace {
Result<Value> Decode(std::initializer_list<unsigned char> bytes) {
  std::string body(bytes.begin(), bytes.end());
  return detail::DecodeBody(body.data(), body.size());
}
}  // namespace

TEST(codec_round_trip_and_malformed_frames) {
  Value message = Value::MakeMap()
                      .Set("type", "Cancel")
                      .Set("request_id", 7)
                      .Set("agent_id", 2);
  auto frame = detail::EncodeFrame(message, detail::kDefaultMaxFrameBytes);
  CHECK_OK(frame);
  // docs/protocol.md section 1: exactly these 39 bytes.
  const char expected[] =
      "\x23\x00\x00\x00\x83\xa4type\xa6" "Cancel\xaarequest_id\x07\xa8" "agent_id\x02";
  CHECK_EQ(frame.value(), std::string(expected, 39));
  auto back = detail::DecodeBody(frame->data() + 4, frame->size() - 4);
  CHECK_OK(back);
  CHECK_EQ(back.value(), message);

  Value every = Value::MakeMap()
                    .Set("nil", nullptr)
                    .Set("t", true)
                    .Set("neg", -5)
                    .Set("big", std::uint64_t{18446744073709551615ULL})
                    .Set("f", 0.25)
                    .Set("s", "h\xc3\xa9")
                    .Set("a", Value::MakeArray().Push(1).Push("x"));
  frame = detail::EncodeFrame(every, detail::kDefaultMaxFrameBytes);
  CHECK_OK(frame);
  back = detail::DecodeBody(frame->data() + 4, frame->size() - 4);
  CHECK_OK(back);
  CHECK_EQ(back.value(), every);
  CHECK_ERROR(detail::EncodeFrame(every, 10), ErrorCode::FrameTooLarge);

  const auto malformed = ErrorCode::MalformedMessage;
  CHECK_ERROR(Decode({0x81, 0xa1, 'a', 0xc4, 0x01, 0x00}), malformed);        // bin
  CHECK_ERROR(Decode({0x81, 0xa1, 'a', 0xd4, 0x01, 0x00}), malformed);        // ext
  CHECK_ERROR(Decode({0x81, 0x01, 0x02}), malformed);                         // int key
  CHECK_ERROR(Decode({0x81, 0x91, 0x01, 0x02}), malformed);                   // array key
  CHECK_ERROR(Decode({0x80, 0x00}), malformed);                               // trailing byte
  CHECK_ERROR(Decode({0x82, 0xa1, 'a'}), malformed);                          // truncated
  CHECK_ERROR(Decode({0x91, 0x01}), malformed);                               // not a map
  CHECK_ERROR(Decode({0xc1}), malformed);                                     // never used
  CHECK_ERROR(Decode({}), malformed);                                         // empty
  CHECK_ERROR(Decode({0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}), malformed);       // ext32 overflow
  std::string deep = "\x81\xa1" "a";
  deep.append(100, '\x91');
  deep.push_back('\x00');
  CHECK_ERROR(detail::DecodeBody(deep.data(), deep.size()), malformed);     // too deep
}
