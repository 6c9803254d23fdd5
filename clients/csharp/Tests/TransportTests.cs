// The transport against a server that misbehaves (a loopback listener in the test), and one
// scenario on the real model.
using System;
using System.Collections.Generic;
using System.Net;
using System.Net.Sockets;
using System.Threading;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class TransportTests
    {
        // Accepts one client, opens its session like the server does, then sends `after` raw.
        static int FakeServer(byte[] after, out Thread thread)
        {
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            thread = new Thread(() =>
            {
                using (var socket = listener.AcceptTcpClient())
                using (var stream = socket.GetStream())
                {
                    var codec = new MsgPackCodec();
                    Action<Dictionary<string, object>> send = frame =>
                    {
                        var body = codec.EncodeToArray(frame);
                        stream.Write(BitConverter.GetBytes(body.Length), 0, 4);
                        stream.Write(body, 0, body.Length);
                    };
                    send(new Dictionary<string, object> { ["type"] = "SessionReady", ["protocol_version"] = 1L, ["session_id"] = 9L, ["max_frame_bytes"] = 1048576L });
                    var header = new byte[4];
                    stream.Read(header, 0, 4);
                    var request = new byte[BitConverter.ToInt32(header, 0)];
                    for (int have = 0; have < request.Length;) have += stream.Read(request, have, request.Length - have);
                    send(new Dictionary<string, object> { ["type"] = "Ack", ["request_id"] = 0L, ["session_id"] = 9L, ["protocol_version"] = 1L });
                    stream.Read(header, 0, 4);  // the test's ListModels header: then the garbage
                    stream.Write(after, 0, after.Length);
                    Thread.Sleep(200);  // lets the client read it before the close
                }
                listener.Stop();
            }) { IsBackground = true };
            thread.Start();
            return port;
        }

        static void DropsOn(byte[] garbage, string why)
        {
            int port = FakeServer(garbage, out Thread thread);
            var client = new TurnloomClient(new ClientOptions { Port = port });
            Pump.Until(client, client.ConnectAsync());
            Assert.AreEqual(9, client.SessionId);
            var lost = new List<TurnloomException>();
            client.Disconnected += e => lost.Add(e);
            var error = Pump.Fails<ConnectionDroppedException>(client, client.ListModelsAsync());
            StringAssert.Contains(why, error.Reason);
            Assert.AreEqual(1, lost.Count);
            Assert.IsFalse(client.IsConnected);
            thread.Join();
        }

        [Test]
        public void UnreadableFrameDropsTheConnectionCleanly()
        {
            DropsOn(new byte[] { 3, 0, 0, 0, 0x82, 0xa1, 0x61 }, "unreadable frame");
        }

        [Test]
        public void FrameOverTheLimitDropsTheConnectionCleanly()
        {
            DropsOn(new byte[] { 0, 0, 0x20, 0 }, "over the 1048576-byte limit");
        }

        [Test]
        public void RealModelStreamsAReply()
        {
            // `serve` without --mock: the catalog's default model (Gemma 3 270M, the package the
            // project's llama extra installs).
            using (var server = new ServerProcess(null, false))
            {
                var client = new TurnloomClient(new ClientOptions { Port = server.Port });
                Pump.Until(client, client.ConnectAsync());
                var models = Pump.Until(client, client.ListModelsAsync());
                Assert.AreEqual(1, models.Count);
                Assert.IsNotNull(models[0].ContextSize);
                var graph = new GraphDescription()
                    .AddPause("gate", new PauseParams { DefaultExit = "say" })
                    .AddGenerate("say", new GenerateParams { Sampling = new SamplingParams { Temperature = 0, MaxTokens = 6 } })
                    .SetStartNode("gate").SetDefaultModelName(models[0].Name);
                var agent = Pump.Until(client, client.CreateAgentAsync(graph));
                var deltas = new List<string>();
                agent.AnswerText += (text, isDelta, isFinal) => { if (isDelta) deltas.Add(text); };
                Assert.IsTrue(Pump.Until(client, agent.SendMessageAsync("The capital of France is")).IsPaused);
                var result = Pump.Until(client, agent.ResumeAsync()).Result;
                Assert.AreEqual(TurnStatus.Success, result.Status, result.ErrorMessage);
                Assert.That(result.TokensGenerated, Is.InRange(1, 6));
                Assert.AreEqual(result.Text, string.Concat(deltas));
                Pump.Until(client, client.DisconnectAsync());
            }
        }
    }
}
