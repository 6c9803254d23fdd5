#include "server_process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <poll.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace tltest {

extern "C" char** environ;

std::string ServerProcess::Start(const std::vector<std::string>& args,
                                 const std::vector<std::string>& env) {
  const char* python = std::getenv("TURNLOOM_PYTHON");
  if (python == nullptr || *python == '\0') python = TURNLOOM_TEST_PYTHON;
  // Built before fork: the child only execs.
  std::vector<std::string> words = {python, "-m", "turnloom", "serve", "--mock", "--port", "0",
                                    "--log-level", "error"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& word : words) argv.push_back(&word[0]);
  argv.push_back(nullptr);
  std::vector<std::string> environment(env);
  for (char** item = environ; *item != nullptr; ++item) environment.emplace_back(*item);
  for (std::string& item : environment) envp.push_back(&item[0]);
  envp.push_back(nullptr);
  int out[2];
  if (pipe(out) != 0) return std::string("pipe: ") + std::strerror(errno);
  pid_ = fork();
  if (pid_ < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid_ == 0) {
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that crashes takes its server with it
#endif
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    execvpe(python, argv.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  // "turnloom: protocol v1 on 127.0.0.1:PORT\n"
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd fd{out[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&fd, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[256];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<std::size_t>(n));
  }
  close(out[0]);  // the server prints nothing else on stdout
  const std::size_t colon = line.rfind(':');
  if (line.find("turnloom: protocol v") != 0 || colon == std::string::npos) {
    Stop();
    return "the server did not start (python: " + std::string(python) + ", output: '" + line +
           "')";
  }
  port_ = static_cast<std::uint16_t>(std::atoi(line.c_str() + colon + 1));
  return "";
}

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 250; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Kill();
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string TestPki::Make() {
  std::string pattern = std::filesystem::temp_directory_path().string() + "/turnloom-pki-XXXXXX";
  if (mkdtemp(&pattern[0]) == nullptr) return std::string("mkdtemp: ") + std::strerror(errno);
  dir_ = pattern;
  const std::string log = File("make_test_certs.log");
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) return std::string("fork: ") + std::strerror(errno);
  if (child == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out != nullptr) dup2(fileno(out), STDERR_FILENO);
    execl("/bin/sh", "sh", TURNLOOM_TEST_CERT_SCRIPT, dir_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::string output;
  if (FILE* in = std::fopen(log.c_str(), "r")) {
    char buf[512];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) output.append(buf, n);
    std::fclose(in);
  }
  return "cannot make the test certificates (" TURNLOOM_TEST_CERT_SCRIPT
         ", needs the openssl command): " + output;
}

TestPki::~TestPki() {
  if (dir_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace tltest
