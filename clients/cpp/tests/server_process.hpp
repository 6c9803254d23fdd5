// The real server for the tests: `python -m turnloom serve --mock --port 0`, started as a
// child process; its port is read from the one line it prints when ready (docs/protocol.md
// section 2). Python is TURNLOOM_PYTHON (set by ctest) or python3.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tltest {

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess() { Stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Empty on success, else why it did not start. `args` are added to the serve command line
  // (e.g. --tls-cert ...), `env` ("NAME=value") to the server's environment.
  std::string Start(const std::vector<std::string>& args = {},
                    const std::vector<std::string>& env = {});
  // SIGTERM (graceful), then SIGKILL if it lingers.
  void Stop();
  // SIGKILL at once: the connection drops without a goodbye.
  void Kill();
  std::uint16_t port() const { return port_; }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// Throwaway certificates (tests/make_test_certs.sh, run with the openssl CLI) in a fresh
// temporary folder, removed again by the destructor.
class TestPki {
 public:
  TestPki() = default;
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  // Empty on success, else why the certificates could not be made.
  std::string Make();
  // DIR/NAME, e.g. File("test-ca.crt").
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

}  // namespace tltest
