// Client: one session with a turnloom server (docs/protocol.md section 2). Connect performs
// the handshake; agents created through it share its connection and its reader thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "turnloom/agent.hpp"
#include "turnloom/error.hpp"
#include "turnloom/events.hpp"
#include "turnloom/future.hpp"
#include "turnloom/graph.hpp"

namespace turnloom {

namespace detail {
class Session;
}

// TLS for a server started with --tls-cert/--tls-key (docs/protocol.md section 1). The server's
// certificate is always verified: it must chain to `ca_file` (or, when that is empty, to the
// system's trust store) and name `server_name` (or `host` when that is empty; an IP address is
// checked against the certificate's IP entries). Any TLS failure is 1001 ConnectionFailed.
struct TlsOptions {
  bool enabled = false;
  std::string ca_file;      // PEM file of the CA(s) to trust; empty: the system's trust store
  std::string cert_file;    // mutual TLS (--tls-client-ca): the client's PEM certificate chain
  std::string key_file;     //   and its PEM private key (both or neither)
  std::string server_name;  // sent as SNI (unless an IP address) and verified; empty: host
};

struct ClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 7411;
  // Connecting plus the handshake (1001 when it runs out).
  std::chrono::milliseconds connect_timeout{10000};
  // The limit of blocking calls made with kUseDefault (kWaitForever: none; 1003 when it runs out).
  std::chrono::milliseconds call_timeout = kWaitForever;
  std::string client_name = "turnloom-cpp";
  // Sent in ConfigureSession when not empty, for a server that requires a key (else 2004).
  std::string auth_key;
  // Plain TCP unless tls.enabled. Send an auth_key only over TLS (or loopback).
  TlsOptions tls;
};

struct CreateAgentOptions {
  bool enable_diagnostics = false;
  std::int64_t max_steps_per_turn = 64;
};

class Client {
 public:
  // Connects and configures the session: 1001 when the server cannot be reached or does not
  // open a session in time, 5004 when it speaks another protocol version, 2003 when full.
  static Result<Client> Connect(const ClientOptions& options = {});

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();  // Close()

  Result<Agent> CreateAgent(const GraphDescription& graph, const CreateAgentOptions& options = {},
                            std::chrono::milliseconds timeout = kUseDefault);
  Future<Agent> CreateAgentAsync(const GraphDescription& graph,
                                 const CreateAgentOptions& options = {});

  Result<std::vector<ModelInfo>> ListModels(std::chrono::milliseconds timeout = kUseDefault);
  Future<std::vector<ModelInfo>> ListModelsAsync();

  // Called once, on the reader thread, when the connection is lost or the server ends the
  // session (1002, 2001, 2003). Every pending call also fails with it.
  void SetOnConnectionLost(std::function<void(const Error&)> callback);

  // Destroys the session's agents (their open turns end cancelled, callbacks included), then
  // closes the connection and stops the reader thread. Idempotent. Called from a callback it
  // only starts the close (it cannot wait for its own thread).
  Result<void> Close(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

  bool connected() const noexcept;
  std::int64_t session_id() const noexcept;

 private:
  explicit Client(std::shared_ptr<detail::Session> session);
  std::shared_ptr<detail::Session> session_;
};

}  // namespace turnloom
