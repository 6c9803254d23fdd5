// Session: connection (plain TCP or TLS), handshake, framing, request matching, event routing,
// connection loss. The only file that includes asio (and OpenSSL, through asio's ssl stream).

// Standalone asio learns that exceptions / RTTI are off only from these macros.
#if !defined(__cpp_exceptions) && !defined(ASIO_NO_EXCEPTIONS)
#define ASIO_NO_EXCEPTIONS 1
#endif
#if !defined(__cpp_rtti) && !defined(__GXX_RTTI) && !defined(ASIO_NO_TYPEID)
#define ASIO_NO_TYPEID 1
#endif

#include "session.hpp"

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent_core.hpp"
#include "codec.hpp"
#include "turnloom/future.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#if defined(ASIO_NO_EXCEPTIONS)
namespace asio::detail {
// asio calls this where it would throw. This file uses only the error_code overloads, so what
// is left is an allocation failure or an io_context that cannot be created: unrecoverable.
template <typename Exception>
void throw_exception(const Exception& e) {
  std::fprintf(stderr, "turnloom: fatal asio error: %s\n", e.what());
  std::abort();
}
}  // namespace asio::detail
#endif

namespace turnloom::detail {

namespace {
constexpr std::int64_t kProtocolVersion = 1;
using Clock = std::chrono::steady_clock;

bool IsEvent(const std::string& type) {
  return type == "AnswerText" || type == "NodeEvent" || type == "TurnComplete";
}

std::chrono::milliseconds Remaining(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

using TlsStream = asio::ssl::stream<asio::ip::tcp::socket>;

Error TlsSetupError(const std::string& what, const std::string& file, const asio::error_code& ec) {
  return Error(ErrorCode::ConnectionFailed,
               "TLS: cannot load the " + what + " '" + file + "': " + ec.message());
}

// The client's TLS context: TLS 1.2 or later, the server's certificate verified against
// `ca_file` (or the system's trust store), and the client's own certificate for mutual TLS.
Result<void> MakeTlsContext(const TlsOptions& tls, asio::ssl::context& context) {
  asio::error_code ec;
  SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
  context.set_verify_mode(asio::ssl::verify_peer, ec);
  if (ec) return Error(ErrorCode::ConnectionFailed, "TLS: " + ec.message());
  if (tls.ca_file.empty()) {
    context.set_default_verify_paths(ec);
    if (ec) return Error(ErrorCode::ConnectionFailed, "TLS: no system trust store: " + ec.message());
  } else {
    context.load_verify_file(tls.ca_file, ec);
    if (ec) return TlsSetupError("CA file", tls.ca_file, ec);
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Error(ErrorCode::ConnectionFailed,
                 "TLS: cert_file and key_file go together (mutual TLS needs both)");
  }
  if (!tls.cert_file.empty()) {
    context.use_certificate_chain_file(tls.cert_file, ec);
    if (ec) return TlsSetupError("client certificate", tls.cert_file, ec);
    context.use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
    if (ec) return TlsSetupError("client key", tls.key_file, ec);
    if (SSL_CTX_check_private_key(context.native_handle()) != 1) {
      return Error(ErrorCode::ConnectionFailed, "TLS: the client key '" + tls.key_file +
                                                    "' does not match '" + tls.cert_file + "'");
    }
  }
  return Result<void>();
}

// SNI (host names only) and the name the server's certificate must carry.
Result<void> SetServerName(TlsStream& stream, const std::string& name) {
  SSL* ssl = stream.native_handle();
  asio::error_code not_ip;
  (void)asio::ip::make_address(name, not_ip);
  if (!not_ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) != 1) {
      return Error(ErrorCode::ConnectionFailed, "TLS: cannot verify the address " + name);
    }
    return Result<void>();
  }
  if (SSL_set_tlsext_host_name(ssl, name.c_str()) != 1 || SSL_set1_host(ssl, name.c_str()) != 1) {
    return Error(ErrorCode::ConnectionFailed, "TLS: cannot verify the server name " + name);
  }
  return Result<void>();
}
}  // namespace

struct Session::Impl {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  asio::ip::tcp::socket socket{io};            // plain TCP (tls unset)
  std::optional<asio::ssl::context> tls_context;
  std::unique_ptr<TlsStream> tls;              // TLS: its own socket; `socket` stays unused
  std::thread thread;
  std::thread::id thread_id;
  std::chrono::milliseconds call_timeout = kWaitForever;

  // Reader-thread only.
  unsigned char header[kFrameHeaderBytes] = {};
  std::string body;
  std::string skip_buffer;

  std::atomic<std::int64_t> next_id{1};
  std::atomic<std::size_t> max_frame_bytes{kDefaultMaxFrameBytes};
  std::atomic<std::int64_t> session_id{0};
  Promise<Value> ready;       // SessionReady (or why it never came)
  Promise<void> disconnected;  // the connection is gone (Close waits for it)

  std::mutex mutex;  // guards everything below
  std::map<std::int64_t, ReplyHandler> pending;
  std::map<std::int64_t, std::shared_ptr<AgentCore>> agents;
  std::deque<std::string> outbox;  // frames to write; the front one is being written
  bool writing = false;
  std::optional<Error> refusal;  // set once closing or closed: why requests are refused
  bool lost = false;
  bool closing = false;  // Close() was called: the loss is expected, no callback
  std::function<void(const Error&)> on_lost;

  asio::ip::tcp::socket& Lowest() { return tls ? tls->next_layer() : socket; }
  // Runs `op` with the stream frames are read from and written to (generic lambda).
  template <class Operation>
  void WithStream(Operation&& op) {
    if (tls) {
      op(*tls);
    } else {
      op(socket);
    }
  }
};

Session::Session(const ClientOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->call_timeout = options.call_timeout;
  impl_->work.emplace(impl_->io.get_executor());
}

Session::~Session() {
  // The reader thread holds a reference while it runs, so it has ended unless this runs on it
  // (the last reference dropped inside a callback): then it cannot join itself.
  if (impl_->thread.joinable()) {
    if (impl_->thread.get_id() == std::this_thread::get_id()) {
      impl_->thread.detach();
    } else {
      impl_->thread.join();
    }
  }
}

Result<std::shared_ptr<Session>> Session::Open(const ClientOptions& options) {
  std::shared_ptr<Session> session(new Session(options));
  session->StartThread();
  Result<void> opened = session->Handshake(options);
  if (!opened.ok()) {
    session->Stop();
    return opened.error();
  }
  return session;
}

void Session::StartThread() {
  Impl& s = *impl_;
  s.thread = std::thread([self = shared_from_this()] {
    SetCurrentReaderOf(self.get());
    self->impl_->io.run();
    SetCurrentReaderOf(nullptr);
  });
  s.thread_id = s.thread.get_id();
}

Result<void> Session::Handshake(const ClientOptions& options) {
  Impl& s = *impl_;
  const auto deadline = Clock::now() + options.connect_timeout;
  const std::string where = options.host + ":" + std::to_string(options.port);

  if (options.tls.enabled) {
    s.tls_context.emplace(asio::ssl::context::tls_client);
    if (Result<void> made = MakeTlsContext(options.tls, *s.tls_context); !made.ok()) {
      return made.error();
    }
    // Made here, before any operation is posted: the reader thread sees it complete.
    s.tls = std::make_unique<TlsStream>(s.io, *s.tls_context);
    const std::string& name = options.tls.server_name.empty() ? options.host
                                                              : options.tls.server_name;
    if (Result<void> named = SetServerName(*s.tls, name); !named.ok()) return named.error();
  }

  asio::error_code ec;
  asio::ip::tcp::resolver resolver(s.io);
  auto endpoints = resolver.resolve(options.host, std::to_string(options.port), ec);
  if (ec) return Error(ErrorCode::ConnectionFailed, "cannot resolve " + where + ": " + ec.message());

  // Every socket operation runs on the reader thread; this one too.
  Promise<void> connected;
  asio::post(s.io, [this, endpoints, connected, where] {
    asio::async_connect(impl_->Lowest(), endpoints,
                        [this, connected, where](const asio::error_code& error, const auto&) {
                          if (error) {
                            connected.Set(Error(ErrorCode::ConnectionFailed,
                                                "cannot connect to " + where + ": " +
                                                    error.message()));
                            return;
                          }
                          asio::error_code ignored;
                          impl_->Lowest().set_option(asio::ip::tcp::no_delay(true), ignored);
                          if (!impl_->tls) {
                            connected.Set(Result<void>());
                            return StartRead();
                          }
                          impl_->tls->async_handshake(
                              asio::ssl::stream_base::client,
                              [this, connected, where](const asio::error_code& failed) {
                                if (failed) {
                                  std::string why = failed.message();
                                  const long verified =
                                      SSL_get_verify_result(impl_->tls->native_handle());
                                  if (verified != X509_V_OK) {
                                    why += std::string(" (") +
                                           X509_verify_cert_error_string(verified) + ")";
                                  }
                                  asio::error_code ignored_too;
                                  impl_->Lowest().close(ignored_too);
                                  connected.Set(Error(ErrorCode::ConnectionFailed,
                                                      "TLS handshake with " + where +
                                                          " failed: " + why));
                                  return;
                                }
                                connected.Set(Result<void>());
                                StartRead();
                              });
                        });
  });
  Result<void> up = connected.GetFuture().Get(Remaining(deadline));
  if (!up.ok()) {
    if (up.error().Is(ErrorCode::Timeout)) {
      return Error(ErrorCode::ConnectionFailed, "cannot connect to " + where + ": timed out");
    }
    return up.error();
  }

  auto refused = [&](const Error& error) -> Error {
    if (error.Is(ErrorCode::Timeout)) {
      return Error(ErrorCode::ConnectionFailed,
                   where + " did not open a session within " +
                       std::to_string(options.connect_timeout.count()) + " ms");
    }
    if (error.Is(ErrorCode::ConnectionDropped)) {
      return Error(ErrorCode::ConnectionFailed, where + " closed the connection: " + error.message);
    }
    return error;  // 2001, 2003, 2004, 5004: the server's own answer
  };
  Result<Value> ready = s.ready.GetFuture().Get(Remaining(deadline));
  if (!ready.ok()) return refused(ready.error());

  Promise<void> configured;
  Value hello = Value::MakeMap()
                    .Set("type", "ConfigureSession")
                    .Set("protocol_version", kProtocolVersion)
                    .Set("client_name", options.client_name);
  if (!options.auth_key.empty()) hello.Set("auth_key", options.auth_key);
  Request(std::move(hello),
          [configured](Result<Value> reply) {
            if (reply.ok()) {
              configured.Set(Result<void>());
            } else {
              configured.Set(reply.error());
            }
          });
  Result<void> done = configured.GetFuture().Get(Remaining(deadline));
  if (!done.ok()) return refused(done.error());
  return Result<void>();
}

// --- reading ---------------------------------------------------------------------------------

void Session::StartRead() {
  impl_->WithStream([this](auto& stream) {
    asio::async_read(stream, asio::buffer(impl_->header),
                     [this](const asio::error_code& ec, std::size_t) {
                       if (ec) return Lost(ec.message());
                       const std::uint32_t size = ReadFrameLength(impl_->header);
                       if (size > impl_->max_frame_bytes.load()) return SkipBody(size);
                       ReadBody(size);
                     });
  });
}

void Session::ReadBody(std::uint32_t size) {
  impl_->body.resize(size);
  impl_->WithStream([this](auto& stream) {
    asio::async_read(stream, asio::buffer(impl_->body),
                     [this](const asio::error_code& ec, std::size_t) {
                       if (ec) return Lost(ec.message());
                       Result<Value> frame = DecodeBody(impl_->body.data(), impl_->body.size());
                       // An unreadable frame costs only itself, as on the server's side.
                       if (frame.ok()) Dispatch(std::move(frame).value());
                       StartRead();
                     });
  });
}

// A frame over the limit is thrown away as it arrives, never held in memory.
void Session::SkipBody(std::uint32_t remaining) {
  if (remaining == 0) return StartRead();
  impl_->skip_buffer.resize(65536);
  const std::size_t chunk = std::min<std::size_t>(remaining, impl_->skip_buffer.size());
  impl_->WithStream([this, remaining, chunk](auto& stream) {
    asio::async_read(stream, asio::buffer(&impl_->skip_buffer[0], chunk),
                     [this, remaining](const asio::error_code& ec, std::size_t n) {
                       if (ec) return Lost(ec.message());
                       SkipBody(remaining - static_cast<std::uint32_t>(n));
                     });
  });
}

void Session::Dispatch(Value frame) {
  Impl& s = *impl_;
  const std::string type = frame.GetString("type");
  if (IsEvent(type)) {
    std::shared_ptr<AgentCore> agent;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      auto it = s.agents.find(frame.GetInt("agent_id", -1));
      if (it != s.agents.end()) agent = it->second;
    }
    if (agent) agent->OnEvent(frame);
    return;
  }
  if (type == "SessionReady") {
    const std::int64_t limit = frame.GetInt("max_frame_bytes");
    if (limit > 0) s.max_frame_bytes = static_cast<std::size_t>(limit);
    s.session_id = frame.GetInt("session_id");
    s.ready.Set(std::move(frame));
    return;
  }
  const Value* request_id = frame.Find("request_id");
  if (request_id != nullptr && request_id->AsInt()) {
    ReplyHandler handler;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      auto it = s.pending.find(*request_id->AsInt());
      if (it == s.pending.end()) return;  // not ours (or already failed): ignore
      handler = std::move(it->second);
      s.pending.erase(it);
    }
    if (type == "ErrorResponse") {
      handler(Error(static_cast<int>(frame.GetInt("code", 5001)), frame.GetString("message")));
    } else {
      handler(std::move(frame));
    }
    return;
  }
  if (type == "ErrorResponse") Notice(frame);
  // Anything else is a frame type this client does not know: ignored, as the protocol asks.
}

// An ErrorResponse answering no request: shutdown (2001), a session closed for a limit or
// refused (2003), an unreadable frame of ours (5001/5003), an event that could not be sent
// (with agent_id: that agent's waits will not be answered).
void Session::Notice(const Value& frame) {
  Impl& s = *impl_;
  Error error(static_cast<int>(frame.GetInt("code", 5001)), frame.GetString("message"));
  if (error.Is(ErrorCode::ServerShuttingDown) || error.Is(ErrorCode::SessionLimitExceeded)) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.refusal) s.refusal = error;
  }
  if (const Value* agent_id = frame.Find("agent_id"); agent_id != nullptr && agent_id->AsInt()) {
    std::shared_ptr<AgentCore> agent;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      auto it = s.agents.find(*agent_id->AsInt());
      if (it != s.agents.end()) agent = it->second;
    }
    if (agent) agent->Fail(error);
  }
  if (error.Is(ErrorCode::ServerShuttingDown) || error.Is(ErrorCode::SessionLimitExceeded)) {
    s.ready.Set(error);  // a refused session: no SessionReady will come
  }
}

// --- writing ---------------------------------------------------------------------------------

void Session::Request(Value message, ReplyHandler done) {
  Impl& s = *impl_;
  const std::int64_t id = s.next_id.fetch_add(1);
  message.Set("request_id", id);
  Result<std::string> frame = EncodeFrame(message, s.max_frame_bytes.load());
  if (!frame.ok()) return done(frame.error());
  bool start = false;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    if (s.refusal) {
      Error why = *s.refusal;
      lock.unlock();
      return done(why);
    }
    // Registered before the frame can be written, so its reply always finds it.
    s.pending.emplace(id, std::move(done));
    s.outbox.push_back(std::move(frame).value());
    start = !s.writing;
    s.writing = true;
  }
  if (start) asio::post(s.io, [this] { Write(); });
}

void Session::Write() {
  Impl& s = *impl_;
  const std::string* front = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.outbox.empty() || s.lost) {
      s.writing = false;
      return;
    }
    front = &s.outbox.front();  // deque elements do not move when others are pushed
  }
  s.WithStream([this, front](auto& stream) {
    asio::async_write(stream, asio::buffer(*front), [this](const asio::error_code& ec, std::size_t) {
      if (ec) {
        std::lock_guard<std::mutex> lock(impl_->mutex);
        impl_->writing = false;
        return;  // the read side reports the loss
      }
      {
        std::lock_guard<std::mutex> lock(impl_->mutex);
        impl_->outbox.pop_front();
      }
      Write();
    });
  });
}

// --- the end of the connection -----------------------------------------------------------------

void Session::Lost(const std::string& why) {
  Impl& s = *impl_;
  std::map<std::int64_t, ReplyHandler> pending;
  std::map<std::int64_t, std::shared_ptr<AgentCore>> agents;
  std::function<void(const Error&)> on_lost;
  Error error;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.lost) return;
    s.lost = true;
    std::string message = "connection to the server was lost (" + why + ")";
    if (s.refusal) message += " after: " + s.refusal->ToString();
    error = Error(ErrorCode::ConnectionDropped, message);
    if (!s.refusal) s.refusal = error;
    pending.swap(s.pending);
    agents.swap(s.agents);
    if (!s.closing) on_lost = std::move(s.on_lost);
    s.on_lost = nullptr;
  }
  asio::error_code ignored;
  s.Lowest().close(ignored);
  for (auto& [id, handler] : pending) handler(error);
  for (auto& [id, agent] : agents) agent->Fail(error);
  s.ready.Set(error);
  if (on_lost) on_lost(error);
  s.disconnected.Set(Result<void>());
}

Result<void> Session::Close(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.closing) return Result<void>();
    s.closing = true;
  }
  const auto deadline = Clock::now() + timeout;
  const bool on_reader = OnReaderThread();
  if (!on_reader) {
    // Destroy the agents first, so their open turns end with their callbacks (the server
    // sends no completion for turns it cancels because the connection closed).
    std::vector<Promise<void>> destroyed;
    for (const auto& agent : Agents()) {
      Promise<void> done;
      agent->DestroyAsync().Then([done](Result<void>) { done.Set(Result<void>()); });
      destroyed.push_back(done);
    }
    for (auto& done : destroyed) (void)done.GetFuture().Get(Remaining(deadline));
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.refusal) s.refusal = Error(ErrorCode::ConnectionDropped, "the client was closed");
  }
  // Half-close and wait for the server to hang up: it has then released the session. Over
  // TLS the close_notify goes first (the pending read then gets the server's as its EOF).
  asio::post(s.io, [this] {
    auto half_close = [this] {
      asio::error_code ignored;
      impl_->Lowest().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    };
    bool lost = false;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      lost = impl_->lost;
    }
    if (!impl_->tls || lost) return half_close();
    impl_->tls->async_shutdown([half_close](const asio::error_code&) { half_close(); });
  });
  if (!on_reader) (void)s.disconnected.GetFuture().Get(Remaining(deadline));
  Stop();
  return Result<void>();
}

void Session::Stop() {
  Impl& s = *impl_;
  s.work.reset();
  if (OnReaderThread()) {
    Lost("closed by the client");  // fails whatever is still pending
    s.io.stop();  // the thread ends when this callback returns; ~Session detaches it
    return;
  }
  // Lost runs on the reader thread, like every other socket operation; then it stops.
  asio::post(s.io, [this] {
    Lost("closed by the client");
    impl_->io.stop();
  });
  if (s.thread.joinable()) s.thread.join();
}

// --- small things ------------------------------------------------------------------------------

std::shared_ptr<AgentCore> Session::AddAgent(std::int64_t id, std::shared_ptr<AgentCore> agent) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->lost) return nullptr;
  std::shared_ptr<AgentCore>& held = impl_->agents[id];
  std::shared_ptr<AgentCore> old = std::move(held);
  held = std::move(agent);
  return old;
}

void Session::RemoveAgent(std::int64_t id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->agents.erase(id);
}

std::vector<std::shared_ptr<AgentCore>> Session::Agents() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<std::shared_ptr<AgentCore>> out;
  for (const auto& [id, agent] : impl_->agents) out.push_back(agent);
  return out;
}

void Session::SetOnConnectionLost(std::function<void(const Error&)> callback) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->on_lost = std::move(callback);
}

bool Session::connected() const noexcept {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return !impl_->refusal.has_value();
}

std::int64_t Session::session_id() const noexcept { return impl_->session_id.load(); }

std::chrono::milliseconds Session::Limit(std::chrono::milliseconds timeout) const noexcept {
  return timeout == kUseDefault ? impl_->call_timeout : timeout;
}

bool Session::OnReaderThread() const noexcept { return CurrentReaderOf() == this; }

}  // namespace turnloom::detail
