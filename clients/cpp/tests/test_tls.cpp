// TLS through asio's ssl stream, against a real server started with --tls-cert/--tls-key
// (and --tls-client-ca, TURNLOOM_AUTH_KEY), with certificates made for each scenario
// (tests/make_test_certs.sh).
#include <chrono>

#include "check.hpp"
#include "graphs.hpp"

using namespace tltest;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kAuthKey = "cpp-tls-test-key-0123456789abcdef";

// The serve options of a TLS server using `pki`'s server certificate.
std::vector<std::string> TlsArgs(const TestPki& pki, bool mutual) {
  std::vector<std::string> args = {"--tls-cert", pki.File("server.crt"), "--tls-key",
                                   pki.File("server.key")};
  if (mutual) {
    args.push_back("--tls-client-ca");
    args.push_back(pki.File("test-ca.crt"));
  }
  return args;
}

// A TLS client of `server` that trusts the test CA.
ClientOptions TlsClient(const ServerProcess& server, const TestPki& pki) {
  ClientOptions options;
  options.port = server.port();
  options.connect_timeout = std::chrono::seconds(5);
  options.call_timeout = std::chrono::seconds(10);  // a hang fails the test instead
  options.tls.enabled = true;
  options.tls.ca_file = pki.File("test-ca.crt");
  return options;
}

bool Mentions(const Error& error, const char* what) {
  return error.message.find(what) != std::string::npos;
}

}  // namespace

// A whole turn over TLS: pause, change params, resume.
TEST_OWN_SERVER(tls_pause_resume) {
  TestPki pki;
  const std::string made = pki.Make();
  CHECK_EQ(made, "");
  ServerProcess server;
  const std::string started = server.Start(TlsArgs(pki, false));
  CHECK_EQ(started, "");

  ClientOptions options = TlsClient(server, pki);  // verifies 127.0.0.1 (an IP SAN)
  auto client = Client::Connect(options);
  CHECK_OK(client);
  CHECK(client->connected());
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  auto step = agent->SendMessage("Do you sell swords?");
  CHECK_OK(step);
  CHECK(step->paused());
  CHECK_EQ(step->pause->node_name, "gate");
  GenerateParams answer;
  answer.system_prompt = "You are Mira, a shopkeeper.";
  answer.template_ = "(over TLS) {{human_message}}";
  CHECK_OK(agent->ChangeParams("answer", answer));
  step = agent->Resume();
  CHECK_OK(step);
  CHECK(step->complete());
  CHECK_EQ(step->result->status, "success");
  CHECK_EQ(step->result->text, "You said: (over TLS) Do you sell swords?");
  CHECK_OK(client->Close());

  // By host name (SNI "localhost", checked against the DNS SAN); a large frame both ways.
  options.host = "localhost";
  options.tls.server_name = "localhost";
  auto named = Client::Connect(options);
  CHECK_OK(named);
  auto again = named->CreateAgent(ShopGraph());
  CHECK_OK(again);
  const std::string big(200 * 1024, 'x');
  CHECK_OK(again->SendMessage(big));
  auto done = again->Resume();
  CHECK_OK(done);
  CHECK_EQ(done->result->text.size(), std::string("You said: ").size() + big.size());
}

// Plain TCP to a TLS server gets no session: 1001 within the connect time-out, no hang; and
// TLS to a plain server fails its handshake at once.
TEST_OWN_SERVER(tls_plain_client_fails_cleanly) {
  TestPki pki;
  const std::string made = pki.Make();
  CHECK_EQ(made, "");
  ServerProcess server;
  const std::string started = server.Start(TlsArgs(pki, false));
  CHECK_EQ(started, "");

  ClientOptions plain = TlsClient(server, pki);
  plain.tls = TlsOptions();
  plain.connect_timeout = std::chrono::seconds(2);
  auto start = Clock::now();
  auto refused = Client::Connect(plain);
  CHECK_ERROR(refused, ErrorCode::ConnectionFailed);
  CHECK(Clock::now() - start < std::chrono::seconds(5));

  ServerProcess plain_server;
  const std::string plain_started = plain_server.Start();
  CHECK_EQ(plain_started, "");
  ClientOptions tls = TlsClient(plain_server, pki);
  start = Clock::now();
  auto mismatched = Client::Connect(tls);
  CHECK_ERROR(mismatched, ErrorCode::ConnectionFailed);
  CHECK(Mentions(mismatched.error(), "TLS handshake"));
  CHECK(Clock::now() - start < std::chrono::seconds(4));
}

// The server's certificate must chain to a trusted CA and carry the name asked for.
TEST_OWN_SERVER(tls_untrusted_server_refused) {
  TestPki pki;
  const std::string made = pki.Make();
  CHECK_EQ(made, "");
  ServerProcess server;
  const std::string started = server.Start(TlsArgs(pki, false));
  CHECK_EQ(started, "");

  ClientOptions options = TlsClient(server, pki);
  options.tls.ca_file = pki.File("rogue-ca.crt");  // another CA
  auto rogue = Client::Connect(options);
  CHECK_ERROR(rogue, ErrorCode::ConnectionFailed);
  CHECK(Mentions(rogue.error(), "certificate verify failed"));

  options.tls.ca_file = "";  // the system's trust store: the test CA is not in it
  auto system = Client::Connect(options);
  CHECK_ERROR(system, ErrorCode::ConnectionFailed);
  CHECK(Mentions(system.error(), "certificate verify failed"));

  options.tls.ca_file = pki.File("test-ca.crt");
  options.tls.server_name = "shop.example.com";  // trusted CA, but not that name
  auto misnamed = Client::Connect(options);
  CHECK_ERROR(misnamed, ErrorCode::ConnectionFailed);
  CHECK(Mentions(misnamed.error(), "certificate verify failed"));

  options.tls.server_name = "";
  options.tls.ca_file = pki.File("no-such-ca.crt");  // refused before connecting
  auto missing = Client::Connect(options);
  CHECK_ERROR(missing, ErrorCode::ConnectionFailed);
  CHECK(Mentions(missing.error(), "CA file"));

  options.tls.ca_file = pki.File("test-ca.crt");  // and the right one still works
  CHECK_OK(Client::Connect(options));
}

// --tls-client-ca: only clients with a certificate from that CA get a session.
TEST_OWN_SERVER(tls_mutual_client_certificate) {
  TestPki pki;
  const std::string made = pki.Make();
  CHECK_EQ(made, "");
  ServerProcess server;
  const std::string started = server.Start(TlsArgs(pki, true));
  CHECK_EQ(started, "");

  ClientOptions options = TlsClient(server, pki);
  auto start = Clock::now();
  auto anonymous = Client::Connect(options);
  CHECK_ERROR(anonymous, ErrorCode::ConnectionFailed);
  CHECK(Clock::now() - start < std::chrono::seconds(4));

  options.tls.cert_file = pki.File("rogue-client.crt");
  options.tls.key_file = pki.File("rogue-client.key");
  auto rogue = Client::Connect(options);
  CHECK_ERROR(rogue, ErrorCode::ConnectionFailed);

  options.tls.cert_file = pki.File("client.crt");
  options.tls.key_file = pki.File("rogue-client.key");  // not that certificate's key
  auto mismatched = Client::Connect(options);
  CHECK_ERROR(mismatched, ErrorCode::ConnectionFailed);
  CHECK(Mentions(mismatched.error(), "client key"));

  options.tls.key_file = pki.File("client.key");
  auto client = Client::Connect(options);
  CHECK_OK(client);
  auto agent = client->CreateAgent(ShopGraph());
  CHECK_OK(agent);
  auto step = agent->SendMessage("hello");
  CHECK_OK(step);
  CHECK(step->paused());
  step = agent->Resume();
  CHECK_OK(step);
  CHECK_EQ(step->result->status, "success");
}

// An auth key over TLS: the right one opens the session, a wrong or missing one is 2004.
TEST_OWN_SERVER(tls_auth_key) {
  TestPki pki;
  const std::string made = pki.Make();
  CHECK_EQ(made, "");
  ServerProcess server;
  const std::string started =
      server.Start(TlsArgs(pki, false), {std::string("TURNLOOM_AUTH_KEY=") + kAuthKey});
  CHECK_EQ(started, "");

  ClientOptions options = TlsClient(server, pki);
  options.auth_key = kAuthKey;
  auto client = Client::Connect(options);
  CHECK_OK(client);
  auto models = client->ListModels();
  CHECK_OK(models);
  CHECK(!models->empty());

  options.auth_key = "cpp-tls-test-key-but-not-this-one";
  auto wrong = Client::Connect(options);
  CHECK_ERROR(wrong, ErrorCode::Unauthorized);

  options.auth_key = "";
  auto missing = Client::Connect(options);
  CHECK_ERROR(missing, ErrorCode::Unauthorized);
}
