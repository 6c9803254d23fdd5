// Cancel, pause time-outs, streaming, connection loss, shutdown, disconnect and durable agents.
using System;
using System.Collections.Generic;
using System.IO;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class LifecycleTests : ServerTest
    {
        [Test]
        public void CancelEndsThePausedTurnBeforeItsReply()
        {
            var agent = Create(Graphs.Shop());
            var completed = new List<TurnStatus>();
            int finals = 0;
            agent.TurnComplete += result => completed.Add(result.Status);
            agent.AnswerText += (text, isDelta, isFinal) => finals += isFinal ? 1 : 0;
            Await(agent.SendMessageAsync("hello"));
            Assert.IsTrue(Await(agent.CancelAsync()));
            // The completion and the final chunk come before Cancel's reply.
            Assert.AreEqual(new[] { TurnStatus.Cancelled }, completed.ToArray());
            Assert.AreEqual(1, finals);
            Assert.AreEqual(TurnStatus.Cancelled, agent.LastResult.Status);
            Assert.IsFalse(Await(agent.CancelAsync()), "no open turn: not an error");
            Assert.IsTrue(Await(agent.SendMessageAsync("next")).IsPaused, "usable again");
        }

        [Test]
        public void PauseTimesOutToItsEndOrItsTimeoutExit()
        {
            var ends = Create(Graphs.Shop(300));
            var step = Await(ends.SendMessageAsync("hello"));
            Assert.AreEqual(300, step.Pause.TimeoutMs);
            var done = Await(ends.WaitCompleteAsync());
            Assert.AreEqual(TurnStatus.PauseTimedOut, done.Status);
            Assert.AreEqual("pause_timed_out", done.StatusName);

            var fallsBack = Create(Graphs.Shop(300, "slow"));
            string resumedTo = null;
            fallsBack.Resumed += (node, to) => resumedTo = to;
            Await(fallsBack.SendMessageAsync("hello"));
            done = Await(fallsBack.WaitCompleteAsync());
            Assert.AreEqual(TurnStatus.Success, done.Status);
            Assert.AreEqual("Too slow.", done.Text);
            Assert.AreEqual("slow", resumedTo);
        }

        [Test]
        public void DroppedConnectionFailsEverythingWith1002()
        {
            var agent = Create(Graphs.Shop());
            var agentErrors = new List<TurnloomException>();
            var clientErrors = new List<TurnloomException>();
            agent.Disconnected += e => agentErrors.Add(e);
            Client.Disconnected += e => clientErrors.Add(e);
            Await(agent.SendMessageAsync("hello"));
            var waiting = agent.WaitCompleteAsync();
            Server.Kill();
            Fails<ConnectionDroppedException>(waiting);
            Pump.Until(Client, () => clientErrors.Count == 1);
            Assert.AreEqual(1, agentErrors.Count);
            Assert.AreEqual(ErrorCode.ConnectionDropped, agentErrors[0].Code);
            Assert.IsFalse(Client.IsConnected);
            Fails<ConnectionDroppedException>(agent.ResumeAsync());  // later calls fail at once
            Fails<ConnectionDroppedException>(Client.ListModelsAsync());
            Await(Client.DisconnectAsync());  // nothing left to close: completes
        }

        [Test]
        public void ServerShutdownCancelsTurnsThenRefuses()
        {
            var agent = Create(Graphs.Shop());
            var completions = new List<TurnStatus>();
            agent.TurnComplete += result => completions.Add(result.Status);
            Await(agent.SendMessageAsync("hello"));
            Server.Terminate();  // SIGTERM: graceful
            Pump.Until(Client, () => !Client.IsConnected && Client.PendingCount == 0 && completions.Count == 1);
            Assert.AreEqual(TurnStatus.Cancelled, completions[0]);
            var refused = Pump.Fails<TurnloomException>(Client, agent.SendMessageAsync("again"));
            Assert.That(refused.Code == ErrorCode.ServerShuttingDown || refused.Code == ErrorCode.ConnectionDropped, refused.ToString());
        }

        [Test]
        public void DisconnectEndsOpenTurnsWithTheirCallbacks()
        {
            var agent = Create(Graphs.Shop());
            var completions = new List<TurnStatus>();
            agent.TurnComplete += result => completions.Add(result.Status);
            Await(agent.SendMessageAsync("hello"));
            Await(Client.DisconnectAsync());
            Assert.AreEqual(new[] { TurnStatus.Cancelled }, completions.ToArray());
            Fails<AgentAlreadyDestroyedException>(agent.ResumeAsync());
            Fails<ConnectionDroppedException>(Client.ListModelsAsync());
        }

        [Test]
        public void ConnectingToNothingFails()
        {
            int port = Server.Port;
            Server.Kill();
            var client = new TurnloomClient(new ClientOptions { Port = port });
            var failed = Pump.Fails<ConnectionFailedException>(client, client.ConnectAsync());
            StringAssert.Contains(port.ToString(), failed.Reason);
        }

        [Test]
        public void TwoAgentsInterleaveOnOneConnection()
        {
            var a = Create(Graphs.Shop());
            var b = Create(Graphs.Shop());
            Assert.AreNotEqual(a.Id, b.Id);
            var sentA = a.SendMessageAsync("from A");
            var sentB = b.SendMessageAsync("from B");
            Assert.IsTrue(Await(sentA).IsPaused && Await(sentB).IsPaused);
            Await(a.ChangeParamFieldsAsync("answer", new Dictionary<string, object> { ["template"] = "Alice: {{human_message}}" }));
            Await(b.ChangeParamFieldsAsync("answer", new Dictionary<string, object> { ["template"] = "Bob: {{human_message}}" }));
            var doneB = b.ResumeAsync();
            var doneA = a.ResumeAsync();
            Assert.AreEqual("You said: Alice: from A", Await(doneA).Result.Text);
            Assert.AreEqual("You said: Bob: from B", Await(doneB).Result.Text);
        }
    }

    [TestFixture]
    public class StreamingTests : ServerTest
    {
        // A reply streamed one word per AnswerText delta, then a slow one to cancel mid-stream.
        protected override string Script =>
            "{\"steps\": [\"Once upon a time there was a dragon.\", " +
            "{\"reply\": \"one two three four five six seven eight nine ten\", \"delay_ms\": 100}]}";

        [Test]
        public void StreamingTextHasExactlyOneFinalChunk()
        {
            var agent = Create(Graphs.Say());
            var chunks = new List<KeyValuePair<string, bool>>();  // text, final
            agent.AnswerText += (text, isDelta, isFinal) =>
            {
                Assert.AreNotEqual(isDelta, isFinal, "a chunk is a delta or the final one");
                chunks.Add(new KeyValuePair<string, bool>(text, isFinal));
            };
            var step = Await(agent.SendMessageAsync("Tell me a story."));
            Assert.AreEqual("Once upon a time there was a dragon.", step.Result.Text);
            Assert.AreEqual(9, chunks.Count, "8 words, then the final chunk");
            var deltas = chunks.GetRange(0, 8).ConvertAll(c => c.Key);
            Assert.IsTrue(chunks.GetRange(0, 8).TrueForAll(c => !c.Value));
            Assert.AreEqual(step.Result.Text, string.Concat(deltas));
            Assert.IsTrue(chunks[8].Value);
            Assert.AreEqual(step.Result.Text, chunks[8].Key);

            // The slow reply: cancelled after its first word, still exactly one final chunk.
            chunks.Clear();
            var sent = agent.SendMessageAsync("Count.");
            Pump.Until(Client, () => chunks.Count >= 1);
            Assert.IsTrue(Await(agent.CancelAsync()));
            var result = Await(sent).Result;
            Assert.AreEqual(TurnStatus.Cancelled, result.Status);
            var finals = chunks.FindAll(c => c.Value);
            Assert.AreEqual(1, finals.Count);
            Assert.AreEqual(result.Text, finals[0].Key);
            Assert.Less(result.Text.Length, "one two three four five six seven eight nine ten".Length);
        }
    }

    [TestFixture]
    public class DurableTests
    {
        [Test]
        public void DurableAgentIsReattachedWithItsToken()
        {
            string store = Path.Combine(Path.GetTempPath(), "turnloom-store-" + Guid.NewGuid().ToString("N") + ".sqlite");
            try
            {
                using (var server = new ServerProcess(null, true, "--store", store))
                {
                    var first = new TurnloomClient(new ClientOptions { Port = server.Port });
                    Pump.Until(first, first.ConnectAsync());
                    var agent = Pump.Until(first, first.CreateAgentAsync(Graphs.Shop(), new AgentOptions { Durable = true, InputPolicy = InputPolicy.Merge }));
                    Assert.IsTrue(agent.IsDurable);
                    Assert.AreEqual(43, agent.ResumeToken.Length);
                    Assert.IsTrue(Pump.Until(first, agent.SendMessageAsync("Keep my sword.")).IsPaused);
                    first.Dispose();  // the connection drops; the durable agent stays, paused

                    var second = new TurnloomClient(new ClientOptions { Port = server.Port });
                    Pump.Until(second, second.ConnectAsync());
                    Pump.Fails<InvalidAgentIdException>(second, second.AttachAgentAsync(agent.Id, "not-the-token"));
                    var back = Pump.Until(second, second.AttachAgentAsync(agent.Id, agent.ResumeToken));
                    Assert.AreEqual("paused", back.AttachedState.State);
                    Assert.AreEqual(InputPolicy.Merge, back.InputPolicy);  // the agent's own, heard on attach
                    Assert.AreEqual("gate", back.CurrentPause.NodeName);
                    var step = Pump.Until(second, back.ResumeAsync());
                    Assert.AreEqual("You said: Keep my sword.", step.Result.Text);
                    Pump.Until(second, back.DestroyAsync());
                    Pump.Until(second, second.DisconnectAsync());
                }
            }
            finally
            {
                foreach (var file in Directory.GetFiles(Path.GetTempPath(), Path.GetFileName(store) + "*")) File.Delete(file);
            }
        }

        [Test]
        public void AnotherSessionAttachingTheAgentDetachesItHere()
        {
            string store = Path.Combine(Path.GetTempPath(), "turnloom-store-" + Guid.NewGuid().ToString("N") + ".sqlite");
            try
            {
                using (var server = new ServerProcess(null, true, "--store", store))
                {
                    var first = new TurnloomClient(new ClientOptions { Port = server.Port });
                    Pump.Until(first, first.ConnectAsync());
                    var held = Pump.Until(first, first.CreateAgentAsync(Graphs.Shop(), new AgentOptions { Durable = true }));
                    var lost = new List<TurnloomException>();
                    int completions = 0;
                    held.Disconnected += e => lost.Add(e);
                    held.TurnComplete += _ => completions++;
                    Assert.IsTrue(Pump.Until(first, held.SendMessageAsync("Hold my shield.")).IsPaused);
                    var waiting = held.WaitCompleteAsync();
                    Pump.Until(first, first.ListModelsAsync());  // WaitComplete's reply is in: it waits

                    var second = new TurnloomClient(new ClientOptions { Port = server.Port });
                    Pump.Until(second, second.ConnectAsync());
                    var taken = Pump.Until(second, second.AttachAgentAsync(held.Id, held.ResumeToken));
                    Assert.AreEqual("paused", taken.AttachedState.State);

                    // The first session hears AgentDetached: its waits fail with 3001, and so
                    // do its later requests for the agent.
                    var error = Pump.Fails<InvalidAgentIdException>(first, waiting);
                    StringAssert.Contains("attached by another session", error.Reason);
                    Assert.AreEqual(1, lost.Count);
                    Assert.AreEqual(ErrorCode.InvalidAgentId, lost[0].Code);
                    Pump.Fails<InvalidAgentIdException>(first, held.ResumeAsync());
                    Assert.IsTrue(first.IsConnected, "only the agent is gone, not the session");

                    Assert.AreEqual("You said: Hold my shield.", Pump.Until(second, taken.ResumeAsync()).Result.Text);
                    Pump.Until(first, first.ListModelsAsync());
                    Assert.AreEqual(0, completions, "the turn's end went to the session that holds it");
                    Pump.Until(second, taken.DestroyAsync());
                    Pump.Until(second, second.DisconnectAsync());
                    Pump.Until(first, first.DisconnectAsync());
                }
            }
            finally
            {
                foreach (var file in Directory.GetFiles(Path.GetTempPath(), Path.GetFileName(store) + "*")) File.Delete(file);
            }
        }
    }
}
