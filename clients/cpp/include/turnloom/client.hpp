// Client: one session with a turnloom server (docs/protocol.md section 2). Connect performs
// the handshake; agents created through it share its connection and its reader thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  // What a SendMessage does while a turn is open (sent only when not Reject).
  InputPolicy input_policy = InputPolicy::Reject;
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

  // Save slots, kept in the server's store and shared by all its sessions (the server needs
  // --store PATH, else 3007; docs/reference/durability.md, "Save slots"). Agent::Save writes
  // one. Loaded and forked agents belong to this session, keep the saved input policy, and
  // stand where the save was: Wait() gives their step (a pause keeps the time it had left).
  //
  // A new agent from `slot` (3007 if there is no such slot, naming those there are). With
  // `replace`, this session's agent of that id is destroyed (its open turn ends cancelled)
  // and the slot's agent takes its place and its id; the old Agent handle is then 3002.
  Result<Agent> Load(std::string_view slot, std::optional<std::int64_t> replace = std::nullopt,
                     std::chrono::milliseconds timeout = kUseDefault);
  Future<Agent> LoadAsync(std::string_view slot, std::optional<std::int64_t> replace = std::nullopt);
  // A new agent that goes on independently from one of this session's agents at rest (idle
  // or paused; 3004 while its turn runs), or from a slot.
  Result<Agent> Fork(const Agent& source, std::chrono::milliseconds timeout = kUseDefault);
  Future<Agent> ForkAsync(const Agent& source);
  Result<Agent> Fork(std::string_view slot, std::chrono::milliseconds timeout = kUseDefault);
  Future<Agent> ForkAsync(std::string_view slot);
  // The slots (of one saved agent, or all), newest first.
  Result<std::vector<SlotInfo>> ListSlots(std::optional<std::int64_t> agent_id = std::nullopt,
                                          std::chrono::milliseconds timeout = kUseDefault);
  Future<std::vector<SlotInfo>> ListSlotsAsync(std::optional<std::int64_t> agent_id = std::nullopt);
  // Removes a slot; false when there was none.
  Result<bool> DeleteSlot(std::string_view slot, std::chrono::milliseconds timeout = kUseDefault);
  Future<bool> DeleteSlotAsync(std::string_view slot);

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
  // A LoadSlot or ForkAgent: the agent its CreateAgentResponse names, taken into the session.
  Future<Agent> AdoptAsync(Value message, std::string slot);
  // Waits for `start()`'s future within the call's limit (refused on the reader thread).
  template <class T, class Start>
  Result<T> Block(const char* operation, std::chrono::milliseconds timeout, Start start);
  std::shared_ptr<detail::Session> session_;
};

}  // namespace turnloom
