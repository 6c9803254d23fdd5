// A minimal test harness (no test framework dependency, and it builds without exceptions):
// TEST(name) registers a scenario; CHECK* record a failure and return from the scenario.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "server_process.hpp"
#include "turnloom/turnloom.hpp"

namespace tltest {

struct Context {
  ServerProcess& server;
  bool failed = false;
  turnloom::ClientOptions Options() const {
    turnloom::ClientOptions options;
    options.port = server.port();
    options.connect_timeout = std::chrono::seconds(10);
    options.call_timeout = std::chrono::seconds(10);  // a hang fails the test instead
    return options;
  }
};

using TestFunction = void (*)(Context&);
struct TestCase {
  const char* name;
  TestFunction run;
  bool own_server;  // the scenario starts its own servers (ctx.server is not started)
};
std::vector<TestCase>& Registry();
struct Register {
  Register(const char* name, TestFunction run, bool own_server = false) {
    Registry().push_back({name, run, own_server});
  }
};

inline void Report(Context& ctx, const char* file, int line, const std::string& what) {
  ctx.failed = true;
  std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what.c_str());
}

}  // namespace tltest

#define TEST(name)                                              \
  static void name(::tltest::Context& ctx);                     \
  static ::tltest::Register register_##name(#name, &name);      \
  static void name([[maybe_unused]] ::tltest::Context& ctx)

// A scenario that starts its own servers (e.g. with TLS options).
#define TEST_OWN_SERVER(name)                                       \
  static void name(::tltest::Context& ctx);                         \
  static ::tltest::Register register_##name(#name, &name, true);    \
  static void name([[maybe_unused]] ::tltest::Context& ctx)

#define CHECK(cond)                                            \
  do {                                                         \
    if (!(cond)) {                                             \
      ::tltest::Report(ctx, __FILE__, __LINE__, #cond);        \
      return;                                                  \
    }                                                          \
  } while (0)

#define CHECK_EQ(a, b)                                                                     \
  do {                                                                                     \
    const auto check_a_ = (a); /* copies: (a) may be a member of a temporary */           \
    const auto check_b_ = (b);                                                             \
    if (!(check_a_ == check_b_)) {                                                         \
      ::tltest::Report(ctx, __FILE__, __LINE__,                                            \
                       std::string(#a " == " #b ": ") + ::tltest::Show(check_a_) + " vs " + \
                           ::tltest::Show(check_b_));                                      \
      return;                                                                              \
    }                                                                                      \
  } while (0)

// A Result that must be ok: prints its error otherwise.
#define CHECK_OK(result)                                                                    \
  do {                                                                                      \
    auto&& check_r_ = (result); /* evaluated once: it may be a blocking call */            \
    if (!check_r_.ok()) {                                                                   \
      ::tltest::Report(ctx, __FILE__, __LINE__,                                             \
                       std::string(#result " failed: ") + check_r_.error().ToString());     \
      return;                                                                               \
    }                                                                                       \
  } while (0)

// A Result that must have failed with `code`.
#define CHECK_ERROR(result, code)                                                           \
  do {                                                                                      \
    auto&& check_r_ = (result); /* evaluated once: it may be a blocking call */            \
    if (check_r_.ok()) {                                                                    \
      ::tltest::Report(ctx, __FILE__, __LINE__, std::string(#result " succeeded; wanted ") + \
                                                    ::turnloom::ErrorCodeName(int(code)));  \
      return;                                                                               \
    }                                                                                       \
    if (!check_r_.error().Is(code)) {                                                       \
      ::tltest::Report(ctx, __FILE__, __LINE__,                                             \
                       std::string(#result ": wanted ") +                                   \
                           ::turnloom::ErrorCodeName(int(code)) + ", got " +                \
                           check_r_.error().ToString());                                    \
      return;                                                                               \
    }                                                                                       \
  } while (0)

namespace tltest {
inline std::string Show(const std::string& s) { return "\"" + s + "\""; }
inline std::string Show(const char* s) { return Show(std::string(s)); }
inline std::string Show(bool b) { return b ? "true" : "false"; }
template <class T>
std::string Show(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(v);
  } else if constexpr (std::is_same_v<T, turnloom::Value>) {
    return v.ToDebugString();
  } else {
    return "(value)";
  }
}
}  // namespace tltest
