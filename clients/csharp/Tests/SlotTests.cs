// Save slots against a real `serve --mock --store PATH`: SaveAsync, LoadAsync (new, or in place
// of an agent, whose old face is then destroyed, with the steps it still waits for),
// ForkAsync (of an agent, of a slot),
// ListSlotsAsync and DeleteSlotAsync, their callback forms, and their refusals.
using System.Collections.Generic;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class SlotTests : ServerTest
    {
        protected override bool WithStore => true;

        // The model "slow" streams its one reply a word every 300 ms: a turn still running when
        // the test saves it. The model "mock" echoes.
        protected override string Script =>
            "{\"models\": {\"slow\": [{\"reply\": \"one two three four five six\", \"delay_ms\": 300}]}}";

        [Test]
        public void SaveLoadForkListAndDeleteOverTheWire()
        {
            var agent = Create(Graphs.Door(ToolCallDisposition.AwaitResult), new AgentOptions { InputPolicy = InputPolicy.Enqueue });
            var step = Await(agent.SendMessageAsync(Graphs.OpenDoorCall));
            Assert.IsTrue(step.IsPaused);
            string callId = step.Pause.PendingCalls[0].CallId;

            // Saved while paused with a tool call pending.
            var info = Await(agent.SaveAsync("door"));
            Assert.AreEqual("door", info.Slot);
            Assert.AreEqual(agent.Id, info.AgentId);
            Assert.Greater(info.Size, 0);
            Assert.Greater(info.SavedAt, 1e9, "absolute seconds, not a monotonic clock");
            var first = Await(agent.ResumeWithToolResultAsync(new ToolResult(callId, "red"))).Result;
            Assert.AreEqual(TurnStatus.Success, first.Status);

            // A fork of the slot stands at the saved pause, with the saved policy, and goes on alike.
            var fork = Await(Client.ForkAsync("door"));
            Assert.AreNotEqual(agent.Id, fork.Id);
            Assert.AreEqual(InputPolicy.Enqueue, fork.InputPolicy);
            var at = Await(fork.WaitAsync());
            Assert.IsTrue(at.IsPaused);
            Assert.AreEqual("detect", at.Pause.NodeName);
            Assert.AreEqual(step.Pause.TurnId, at.Pause.TurnId);
            Assert.AreEqual(callId, at.Pause.PendingCalls[0].CallId);
            Assert.AreEqual(first.Text, Await(fork.ResumeWithToolResultAsync(new ToolResult(callId, "red"))).Result.Text);

            // A fork of an agent at rest has the same last turn.
            var again = Await(Client.ForkAsync(agent));
            Assert.AreEqual(first.TurnId, Await(again.WaitAsync()).Result.TurnId);

            // Loading in place of the agent keeps its id; the old face's agent is gone.
            var replaced = Await(Client.LoadAsync("door", agent.Id));
            Assert.AreEqual(agent.Id, replaced.Id);
            Assert.IsTrue(agent.IsDestroyed);
            Assert.IsFalse(replaced.IsDestroyed);
            Assert.AreEqual(callId, Await(replaced.WaitAsync()).Pause.PendingCalls[0].CallId);
            Fails<AgentAlreadyDestroyedException>(agent.SendMessageAsync("the old face"));
            Assert.AreEqual(first.Text, Await(replaced.ResumeWithToolResultAsync(new ToolResult(callId, "red"))).Result.Text);

            // A second slot, then the listing: newest first, of all or of one agent.
            Await(fork.SaveAsync("door-later"));
            var all = Await(Client.ListSlotsAsync());
            CollectionAssert.AreEqual(new[] { "door-later", "door" }, all.ConvertAll(s => s.Slot));
            Assert.AreEqual(fork.Id, all[0].AgentId);
            var mine = Await(Client.ListSlotsAsync(agent.Id));
            Assert.AreEqual(1, mine.Count);
            Assert.AreEqual(info.Size, mine[0].Size);

            // The slots are the server's: another session loads them into its own agents, and
            // replaces only its own.
            var other = Connect();
            try
            {
                var theirs = Pump.Until(other, other.LoadAsync("door-later"));
                Assert.AreEqual(first.Text, Pump.Until(other, theirs.WaitAsync()).Result.Text);
                Pump.Fails<InvalidAgentIdException>(other, other.LoadAsync("door", agent.Id));
            }
            finally
            {
                other.Dispose();
            }

            Assert.IsTrue(Await(Client.DeleteSlotAsync("door")));
            Assert.IsFalse(Await(Client.DeleteSlotAsync("door")));
            var missing = Fails<InvalidParamValueException>(Client.LoadAsync("door"));
            StringAssert.Contains("no save slot 'door'", missing.Reason);
            StringAssert.Contains("door-later", missing.Reason, "it names the slots there are");
        }

        [Test]
        public void LoadingInPlaceEndsTheOldAgentsOpenTurnThenRetiresIt()
        {
            var agent = Create(Graphs.Shop());
            Await(agent.SaveAsync("fresh"));  // idle, before any turn
            var oldEnds = new List<string>();
            agent.TurnComplete += r => oldEnds.Add(r.StatusName);
            Assert.IsTrue(Await(agent.SendMessageAsync("Keep my sword.")).IsPaused);
            var oldEnd = agent.WaitCompleteAsync();
            Await(agent.GetStateAsync());  // replies come in order: the wait is registered

            var replaced = Await(Client.LoadAsync("fresh", agent.Id));
            Assert.AreEqual("cancelled", Await(oldEnd).StatusName);
            CollectionAssert.AreEqual(new[] { "cancelled" }, oldEnds);
            Fails<AgentAlreadyDestroyedException>(agent.WaitAsync());
            Fails<AgentAlreadyDestroyedException>(agent.SaveAsync("fresh"));
            var fresh = Await(replaced.WaitAsync());
            Assert.IsFalse(fresh.IsPaused);
            Assert.IsNull(fresh.Result, "the save was made before any turn");
            Assert.IsTrue(Await(replaced.SendMessageAsync("Sell me a shield.")).IsPaused);
            Assert.AreEqual(1, oldEnds.Count, "the new agent's events are not the old face's");
            Assert.AreEqual("You said: Sell me a shield.", Await(replaced.ResumeAsync()).Result.Text);
        }

        [Test]
        public void AStepAskedOfTheOldFaceDuringALoadInPlaceFailsInsteadOfHanging()
        {
            var agent = Create(Graphs.Shop());
            Await(agent.SaveAsync("fresh"));
            // Sent before the load's answer: the server starts the turn on the slot's agent,
            // and the old face is retired when the load is answered, before the send's Ack.
            var loading = Client.LoadAsync("fresh", agent.Id);
            var sent = agent.SendMessageAsync("Hello.");
            var replaced = Await(loading);
            var error = Fails<AgentAlreadyDestroyedException>(sent);
            StringAssert.Contains("replaced by save slot 'fresh'", error.Reason);
            var at = Await(replaced.WaitAsync());
            Assert.IsTrue(at.IsPaused, "the message started the slot's agent's turn");
            Assert.AreEqual("You said: Hello.", Await(replaced.ResumeAsync()).Result.Text);
        }

        [Test]
        public void SlotCallbackFormsAndRefusals()
        {
            var agent = Create(Graphs.Shop());
            Assert.IsTrue(Await(agent.SendMessageAsync("Hello.")).IsPaused);
            Result<SlotInfo>? saved = null;
            agent.Save("hello", r => saved = r);
            Pump.Until(Client, () => saved != null);
            Assert.IsTrue(saved.Value.Ok);
            Assert.AreEqual("hello", saved.Value.Value.Slot);

            Result<TurnloomAgent>? loaded = null, forked = null, forkedAgent = null;
            Client.Load("hello", null, r => loaded = r);
            Client.Fork("hello", r => forked = r);
            Client.Fork(agent, r => forkedAgent = r);
            Result<List<SlotInfo>>? listed = null;
            Client.ListSlots(null, r => listed = r);
            Pump.Until(Client, () => loaded != null && forked != null && forkedAgent != null && listed != null);
            var ids = new HashSet<long> { agent.Id, loaded.Value.Value.Id, forked.Value.Value.Id, forkedAgent.Value.Value.Id };
            Assert.AreEqual(4, ids.Count, "each is a new agent");
            Assert.AreEqual("You said: Hello.", Await(forkedAgent.Value.Value.ResumeAsync()).Result.Text);
            Assert.AreEqual(1, listed.Value.Value.Count);

            Result<bool>? deleted = null;
            Client.DeleteSlot("hello", r => deleted = r);
            Pump.Until(Client, () => deleted != null);
            Assert.IsTrue(deleted.Value.Value);
            Result<TurnloomAgent>? gone = null;
            Client.Load("hello", null, r => gone = r);
            Pump.Until(Client, () => gone != null);
            Assert.IsInstanceOf<InvalidParamValueException>(gone.Value.Error);

            // A turn that runs cannot be saved or forked; bad names are refused.
            var slow = Create(Graphs.Say("slow"));
            var running = slow.SendMessageAsync("Tell me a story.");
            Fails<AgentBusyException>(slow.SaveAsync("story"));
            Fails<AgentBusyException>(Client.ForkAsync(slow));
            Assert.AreEqual("one two three four five six", Await(running).Result.Text);
            Fails<InvalidParamValueException>(agent.SaveAsync(""));
            Fails<InvalidParamValueException>(agent.SaveAsync(new string('s', 129)));
            Fails<InvalidAgentIdException>(Client.LoadAsync("story", 424242));
        }
    }

    [TestFixture]
    public class NoStoreSlotTests : ServerTest
    {
        [Test]
        public void WithoutAStoreSlotsAreRefusedButAForkWorks()
        {
            var agent = Create(Graphs.Shop());
            Assert.IsTrue(Await(agent.SendMessageAsync("Hello.")).IsPaused);
            var error = Fails<InvalidParamValueException>(agent.SaveAsync("door"));
            StringAssert.Contains("store", error.Reason);
            Fails<InvalidParamValueException>(Client.LoadAsync("door"));
            Fails<InvalidParamValueException>(Client.ForkAsync("door"));
            Fails<InvalidParamValueException>(Client.ListSlotsAsync());
            Fails<InvalidParamValueException>(Client.DeleteSlotAsync("door"));
            var fork = Await(Client.ForkAsync(agent));
            Assert.IsTrue(Await(fork.WaitAsync()).IsPaused);
            Assert.AreEqual("You said: Hello.", Await(fork.ResumeAsync()).Result.Text);
            Assert.IsTrue(Await(agent.WaitAsync()).IsPaused, "the original is untouched");
        }
    }
}
