// TLS and the auth key against a real `serve --tls-cert --tls-key --auth-key-file`, with the
// development certificate of docs/protocol.md section 1 (self-signed for localhost and
// 127.0.0.1, made here with the openssl command) as the one CA the client trusts.
using System;
using System.Diagnostics;
using System.IO;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class TlsTests
    {
        string folder, certificate, key;
        ServerProcess server;

        /// <summary>Makes the certificate and the key file, starts the TLS server.</summary>
        [SetUp]
        public void StartTlsServer()
        {
            folder = Path.Combine(Path.GetTempPath(), "turnloom-tls-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(folder);
            certificate = Path.Combine(folder, "dev-cert.pem");
            string privateKey = Path.Combine(folder, "dev-key.pem");
            // The recipe of docs/protocol.md, word for word but for the folder and the days.
            Run("openssl", "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 " +
                "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 " +
                "-keyout \"" + privateKey + "\" -out \"" + certificate + "\"");
            key = Convert.ToBase64String(Guid.NewGuid().ToByteArray()) + "-game-key";
            string keyFile = Path.Combine(folder, "auth-key");
            File.WriteAllText(keyFile, key + "\n");
            server = new ServerProcess(null, true, "--tls-cert", certificate, "--tls-key", privateKey, "--auth-key-file", keyFile);
        }

        /// <summary>Stops the server, removes the files.</summary>
        [TearDown]
        public void StopTlsServer()
        {
            server?.Dispose();
            if (folder != null) Directory.Delete(folder, true);
        }

        internal static void Run(string program, string arguments)
        {
            var start = new ProcessStartInfo(program, arguments)
            {
                UseShellExecute = false, RedirectStandardError = true, RedirectStandardOutput = true,
            };
            using (var process = Process.Start(start))
            {
                string errors = process.StandardError.ReadToEnd();
                process.WaitForExit();
                Assert.AreEqual(0, process.ExitCode, program + " " + arguments + ": " + errors);
            }
        }

        ClientOptions Options(string host = "127.0.0.1") => new ClientOptions
        {
            Host = host,
            Port = server.Port,
            AuthKey = key,
            Tls = new TlsOptions { Enabled = true, CaFile = certificate },
        };

        [Test]
        public void TlsWithTheKeyRunsAPauseAndResume()
        {
            foreach (string host in new[] { "127.0.0.1", "localhost" })  // the IP entry and the DNS one
            {
                var client = new TurnloomClient(Options(host));
                Pump.Until(client, client.ConnectAsync());
                Assert.IsTrue(client.IsConnected);
                var agent = Pump.Until(client, client.CreateAgentAsync(Graphs.Shop()));
                Assert.IsTrue(Pump.Until(client, agent.SendMessageAsync("Over TLS.")).IsPaused);
                Assert.AreEqual("You said: Over TLS.", Pump.Until(client, agent.ResumeAsync()).Result.Text);
                Pump.Until(client, client.DisconnectAsync());
            }
        }

        [Test]
        public void ACertificateForAnotherNameIsRefused()
        {
            var options = Options();
            options.Tls.ServerName = "shop.example.com";  // the certificate names localhost only
            var client = new TurnloomClient(options);
            var refused = Pump.Fails<ConnectionFailedException>(client, client.ConnectAsync());
            StringAssert.Contains("TLS handshake", refused.Reason);
            Assert.IsFalse(client.IsConnected);
        }

        [Test]
        public void AServerNotSignedByTheTrustedCaIsRefused()
        {
            var options = Options();
            options.Tls.CaFile = "";  // the system's store: it does not know the self-signed certificate
            var client = new TurnloomClient(options);
            var refused = Pump.Fails<ConnectionFailedException>(client, client.ConnectAsync());
            StringAssert.Contains("TLS handshake", refused.Reason);
        }

        [Test]
        public void AMissingOrWrongKeyIsUnauthorized()
        {
            foreach (string wrong in new[] { null, "not-the-key" })
            {
                var options = Options();
                options.AuthKey = wrong;
                var client = new TurnloomClient(options);
                var refused = Pump.Fails<UnauthorizedException>(client, client.ConnectAsync());
                Assert.AreEqual(ErrorCode.Unauthorized, refused.Code);
                StringAssert.DoesNotContain(key, refused.Message);
                Assert.IsFalse(client.IsConnected);
            }
        }
    }

    /// <summary>A server certificate signed by a CA (not the CA file itself): the chain is
    /// checked, and so is the name.</summary>
    [TestFixture]
    public class TlsChainTests
    {
        string folder;

        [SetUp]
        public void MakeFolder()
        {
            folder = Path.Combine(Path.GetTempPath(), "turnloom-tls-chain-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(folder);
        }

        [TearDown]
        public void RemoveFolder() => Directory.Delete(folder, true);

        string F(string name) => Path.Combine(folder, name);

        // NAME.crt and NAME.key: a CA (ca null) or a leaf for `names`, signed by ca.
        void Certificate(string name, string key, string ca, string names)
        {
            string ext = F(name + ".ext");
            File.WriteAllText(ext, ca == null
                ? "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\n"
                : "basicConstraints=critical,CA:FALSE\nauthorityKeyIdentifier=keyid\nextendedKeyUsage=serverAuth\nsubjectAltName=" + names + "\n");
            TlsTests.Run("openssl", "req -new -newkey " + key + " -nodes -subj /CN=" + name + " -keyout \"" + F(name + ".key") +
                "\" -out \"" + F(name + ".csr") + "\"");
            string signing = ca == null
                ? "-signkey \"" + F(name + ".key") + "\""
                : "-CA \"" + F(ca + ".crt") + "\" -CAkey \"" + F(ca + ".key") + "\" -set_serial 0x" + Guid.NewGuid().ToString("N").Substring(0, 12);
            TlsTests.Run("openssl", "x509 -req -sha256 -days 1 -in \"" + F(name + ".csr") + "\" " + signing +
                " -extfile \"" + ext + "\" -out \"" + F(name + ".crt") + "\"");
        }

        ConnectionFailedException Connects(string leaf, string ca)
        {
            using (var server = new ServerProcess(null, true, "--tls-cert", F(leaf + ".crt"), "--tls-key", F(leaf + ".key")))
            {
                var client = new TurnloomClient(new ClientOptions
                {
                    Port = server.Port, Tls = new TlsOptions { Enabled = true, CaFile = F(ca + ".crt") },
                });
                var connecting = client.ConnectAsync();
                Pump.Until(client, () => connecting.IsCompleted);
                if (!connecting.IsFaulted)
                {
                    var agent = Pump.Until(client, client.CreateAgentAsync(Graphs.Trade()));
                    Assert.IsTrue(Pump.Until(client, agent.SendMessageAsync("deal?")).IsPaused);
                    Pump.Until(client, client.DisconnectAsync());
                    return null;
                }
                Assert.IsInstanceOf<ConnectionFailedException>(connecting.Exception.InnerException);
                return (ConnectionFailedException)connecting.Exception.InnerException;
            }
        }

        [Test]
        public void ACaSignedCertificateIsCheckedThroughItsChainAndItsName()
        {
            Certificate("rsa-ca", "rsa:2048", null, null);
            Certificate("shop", "rsa:2048", "rsa-ca", "DNS:localhost,IP:127.0.0.1");
            Certificate("elsewhere", "rsa:2048", "rsa-ca", "DNS:elsewhere.example");
            Certificate("rogue-ca", "rsa:2048", null, null);
            Assert.IsNull(Connects("shop", "rsa-ca"), "signed by the trusted CA, for this address");
            StringAssert.Contains("TLS handshake", Connects("elsewhere", "rsa-ca").Reason);  // another name
            StringAssert.Contains("TLS handshake", Connects("shop", "rogue-ca").Reason);     // another CA
            // EC keys: Mono's X509Chain cannot check them, so the chain is refused, never taken unchecked.
            Certificate("ec-ca", "ec -pkeyopt ec_paramgen_curve:prime256v1", null, null);
            Certificate("ec-shop", "ec -pkeyopt ec_paramgen_curve:prime256v1", "ec-ca", "DNS:localhost,IP:127.0.0.1");
            var ec = Connects("ec-shop", "ec-ca");
            if (Type.GetType("Mono.Runtime") != null) StringAssert.Contains("TLS handshake", ec.Reason);
            else Assert.IsNull(ec, "a runtime whose X509Chain reads EC keys checks the chain");
        }
    }
}
