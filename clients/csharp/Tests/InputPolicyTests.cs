// Input policies: what a player's message does while the agent's turn is open (enqueue,
// interrupt, merge, reject), the MessageEvent of each message, and SetInputPolicy.
using System.Collections.Generic;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class InputPolicyTests : ServerTest
    {
        TurnloomAgent CreateWith(InputPolicy policy, List<string> log)
        {
            var agent = Create(Graphs.Shop(), new AgentOptions { InputPolicy = policy });
            agent.Message += m => log.Add("message " + m.FateName + " " + m.TurnId + " " + m.Text.Replace("\n", "|") +
                (m.ReplacedTurnId != null ? " replaces " + m.ReplacedTurnId : ""));
            agent.Paused += p => log.Add("paused " + p.TurnId);
            agent.TurnComplete += r => log.Add("complete " + r.TurnId + " " + r.StatusName);
            return agent;
        }

        [Test]
        public void AQueuedMessageAnswersAtItsOwnTurnsFirstStep()
        {
            var log = new List<string>();
            var agent = CreateWith(InputPolicy.Enqueue, log);
            var first = Await(agent.SendMessageAsync("one"));
            long turn = first.Pause.TurnId;
            var second = agent.SendMessageAsync("two");  // the first turn is open (paused): it waits
            Await(agent.GetStateAsync());  // replies come in order: the Ack of "two" is in
            Assert.IsFalse(second.IsCompleted, "a queued message is answered by its own turn, not by an Ack");
            CollectionAssert.Contains(log, "message queued  two");

            var done = Await(agent.ResumeAsync());
            Assert.AreEqual("You said: one", done.Result.Text);
            var step = Await(second);
            Assert.IsTrue(step.IsPaused);
            Assert.AreNotEqual(turn, step.Pause.TurnId, "its own turn, not the one it waited behind");
            // The first turn's end, then the "started" message event, then its step.
            int end = log.IndexOf("complete " + turn + " success");
            int started = log.IndexOf("message started " + step.Pause.TurnId + " two");
            int paused = log.IndexOf("paused " + step.Pause.TurnId);
            Assert.That(end >= 0 && end < started && started < paused, string.Join("; ", log));
            Assert.AreEqual("You said: two", Await(agent.ResumeAsync()).Result.Text);
        }

        [Test]
        public void InterruptCancelsTheOpenTurnAndMergeJoinsTheMessages()
        {
            var log = new List<string>();
            var interrupting = CreateWith(InputPolicy.Interrupt, log);
            long cancelled = Await(interrupting.SendMessageAsync("one")).Pause.TurnId;
            var step = Await(interrupting.SendMessageAsync("two"));
            Assert.IsTrue(step.IsPaused);
            CollectionAssert.Contains(log, "complete " + cancelled + " cancelled");
            CollectionAssert.Contains(log, "message interrupted " + step.Pause.TurnId + " two replaces " + cancelled);
            Assert.AreEqual("You said: two", Await(interrupting.ResumeAsync()).Result.Text);

            log.Clear();
            var merging = CreateWith(InputPolicy.Merge, log);
            cancelled = Await(merging.SendMessageAsync("one")).Pause.TurnId;
            step = Await(merging.SendMessageAsync("two"));
            CollectionAssert.Contains(log, "message merged " + step.Pause.TurnId + " one|two replaces " + cancelled);
            Assert.AreEqual("You said: one\ntwo", Await(merging.ResumeAsync()).Result.Text);
        }

        [Test]
        public void SetInputPolicyChangesWhatABusyAgentDoes()
        {
            var log = new List<string>();
            var agent = CreateWith(InputPolicy.Reject, log);
            Await(agent.SendMessageAsync("one"));
            Fails<AgentBusyException>(agent.SendMessageAsync("refused"));
            Assert.IsEmpty(log.FindAll(line => line.StartsWith("message")), "no message events under Reject");

            Await(agent.SetInputPolicyAsync(InputPolicy.Enqueue));  // legal while paused
            var queued = agent.SendMessageAsync("two");
            // The callback form: the message already waiting keeps its place.
            Result? changed = null;
            agent.SetInputPolicy(InputPolicy.Interrupt, result => changed = result);
            Pump.Until(Client, () => changed != null);
            Assert.IsTrue(changed.Value.Ok, changed.Value.Error?.ToString());
            Await(agent.ResumeAsync());
            Assert.IsTrue(Await(queued).IsPaused, "the waiting message ran after the policy changed");

            changed = null;
            agent.SetInputPolicy(InputPolicy.Reject, result => changed = result);
            Pump.Until(Client, () => changed != null);
            Assert.IsTrue(changed.Value.Ok, changed.Value.Error?.ToString());
            Fails<AgentBusyException>(agent.SendMessageAsync("three"));
            Fails<InvalidParamValueException>(Client.RequestAsync(new Dictionary<string, object>
            {
                ["type"] = "SetInputPolicy", ["agent_id"] = agent.Id, ["input_policy"] = "shout",
            }));
            Assert.AreEqual("You said: two", Await(agent.ResumeAsync()).Result.Text);
        }

        [Test]
        public void QueueLimitAndDestroyDropTheWaitingMessages()
        {
            var log = new List<string>();
            var agent = CreateWith(InputPolicy.Enqueue, log);
            Await(agent.SendMessageAsync("open"));
            var waiting = new List<System.Threading.Tasks.Task<Step>>();
            for (int k = 0; k < 8; k++) waiting.Add(agent.SendMessageAsync("m" + k));
            var full = Fails<AgentBusyException>(agent.SendMessageAsync("one too many"));
            StringAssert.Contains("8", full.Reason);

            Await(agent.DestroyAsync());
            foreach (var task in waiting) Fails<AgentAlreadyDestroyedException>(task);
            Assert.AreEqual(8, log.FindAll(line => line.StartsWith("message dropped")).Count, string.Join("; ", log));
        }
    }

    [TestFixture]
    public class RunningTurnPolicyTests : ServerTest
    {
        // A slow streamed reply first (a turn that is running, not paused), then the echo.
        protected override string Script =>
            "{\"steps\": [{\"reply\": \"one two three four five six seven eight nine ten\", \"delay_ms\": 100}]}";

        [Test]
        public void AMessageSentWhileATurnRunsWaitsAndThePolicyCannotChange()
        {
            var agent = Create(Graphs.Say(), new AgentOptions { InputPolicy = InputPolicy.Enqueue });
            int chunks = 0;
            agent.AnswerText += (text, isDelta, isFinal) => chunks++;
            var first = agent.SendMessageAsync("Count.");
            Pump.Until(Client, () => chunks >= 1);  // running: streaming its reply
            Fails<AgentBusyException>(agent.SetInputPolicyAsync(InputPolicy.Reject));  // legal only at rest
            var second = agent.SendMessageAsync("Next.");
            var counted = Await(first).Result;
            Assert.AreEqual("one two three four five six seven eight nine ten", counted.Text);
            var next = Await(second).Result;
            Assert.AreEqual("You said: Next.", next.Text);
            Assert.AreNotEqual(counted.TurnId, next.TurnId);
        }
    }
}
