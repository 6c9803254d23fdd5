// Runs one scenario (or all) against a fresh server:  turnloom_client_tests [name]
// Or runs a program next to a fresh server (the README example):
//   turnloom_client_tests --with-server PROGRAM   (the port is in TURNLOOM_PORT)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "check.hpp"

namespace tltest {
std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}
}  // namespace tltest

namespace {

int RunWithServer(const char* program) {
  tltest::ServerProcess server;
  if (std::string why = server.Start(); !why.empty()) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  setenv("TURNLOOM_PORT", std::to_string(server.port()).c_str(), 1);
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    execl(program, program, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int RunTest(const tltest::TestCase& test) {
  tltest::ServerProcess server;
  if (std::string why = test.own_server ? "" : server.Start(); !why.empty()) {
    std::fprintf(stderr, "%s: %s\n", test.name, why.c_str());
    return 1;
  }
  tltest::Context ctx{server};
  test.run(ctx);
  std::printf("%s: %s\n", test.name, ctx.failed ? "FAILED" : "ok");
  return ctx.failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--with-server") == 0) return RunWithServer(argv[2]);
  int failures = 0;
  bool found = false;
  for (const auto& test : tltest::Registry()) {
    if (argc > 1 && std::strcmp(argv[1], test.name) != 0) continue;
    found = true;
    failures += RunTest(test);
  }
  if (!found) {
    std::fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(any)");
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
