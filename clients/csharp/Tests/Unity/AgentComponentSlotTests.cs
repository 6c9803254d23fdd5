// The Unity agent component's save slots against a real `serve --mock --store PATH`: Save, Load
// (the slot's agent in place of the component's, with its events and tools), Fork, ListSlots,
// their UnityEvents and callbacks, and the calls that wait for the agent (before it exists,
// while a Load replaces it).
//
// Without Unity: the components are built with the stand-in UnityEngine types of
// Tools~/UnityStandIns.cs, and the tests send them Unity's messages (OnEnable, Start, OnDisable)
// by name, as the engine does. Only `make csharp` compiles this file (it defines
// TURNLOOM_UNITY_STANDINS); in Unity's Test Runner it is empty.
#if UNITY_5_3_OR_NEWER && TURNLOOM_UNITY_STANDINS
using System.Collections.Generic;
using System.Reflection;
using NUnit.Framework;
using Turnloom.Unity;

namespace Turnloom.Tests.Unity
{
    /// <summary>A scene: a TurnloomClientBehaviour connected to the test's server, and NPC
    /// components whose events are written down.</summary>
    public abstract class ComponentTest : ServerTest
    {
        /// <summary>The scene's client behaviour (enabled).</summary>
        protected TurnloomClientBehaviour Behaviour;

        /// <summary>What the components' UnityEvents said, in order ("paused gate default",
        /// "turn You said: Hello.", "saved door", "loaded door", "error …").</summary>
        protected readonly List<string> Events = new List<string>();

        /// <summary>Calls a Unity message (OnEnable, Start…) of a component, as the engine does.</summary>
        protected static void Send(object component, string message) =>
            component.GetType()
                .GetMethod(message, BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic)
                .Invoke(component, null);

        /// <summary>Enables the client behaviour (it connects; the pump connects it).</summary>
        [SetUp]
        public void OpenScene()
        {
            Events.Clear();
            Behaviour = new TurnloomClientBehaviour { port = Server.Port, dontDestroyOnLoad = false };
            Send(Behaviour, "OnEnable");
        }

        /// <summary>Disables it (its client closes).</summary>
        [TearDown]
        public void CloseScene() => Send(Behaviour, "OnDisable");

        /// <summary>Pumps the scene's client, as its Update does, until <paramref name="done"/>.</summary>
        protected void Frames(System.Func<bool> done) => Pump.Until(Behaviour.Client, done);

        /// <summary>Pumps the scene's client until the task is done.</summary>
        protected T Frames<T>(System.Threading.Tasks.Task<T> task) => Pump.Until(Behaviour.Client, task);

        /// <summary>An NPC component with <paramref name="graph"/>, started (its agent is created
        /// once the client is connected: pump for it).</summary>
        protected TurnloomAgentComponent Npc(GraphDescription graph)
        {
            var npc = new TurnloomAgentComponent { Graph = graph };
            npc.onPaused.AddListener((node, exit) => Events.Add("paused " + node + " " + exit));
            npc.onTurnComplete.AddListener(text => Events.Add("turn " + text));
            npc.onSaved.AddListener(slot => Events.Add("saved " + slot));
            npc.onLoaded.AddListener(slot => Events.Add("loaded " + slot));
            npc.onError.AddListener(message => Events.Add("error " + message));
            Send(npc, "Start");
            return npc;
        }

        /// <summary>Pumps until <paramref name="line"/> has been said <paramref name="times"/> times
        /// (or, failing, says what was said instead).</summary>
        protected void Said(string line, int times = 1)
        {
            try
            {
                Frames(() => Events.FindAll(e => e == line).Count >= times);
            }
            catch (System.InvalidOperationException)
            {
                Assert.Fail("'" + line + "' x" + times + " never came; the events:\n" + string.Join("\n", Events));
            }
        }

        /// <summary>The events that report a completion.</summary>
        protected List<string> Turns => Events.FindAll(e => e.StartsWith("turn "));

        /// <summary>The events that report an error.</summary>
        protected List<string> Errors => Events.FindAll(e => e.StartsWith("error "));
    }

    [TestFixture]
    public class AgentComponentSlotTests : ComponentTest
    {
        protected override bool WithStore => true;

        // "slow" streams its one reply a word every 300 ms: a turn still running when a test
        // saves or forks it. "mock" echoes.
        protected override string Script =>
            "{\"models\": {\"slow\": [{\"reply\": \"one two three four five six\", \"delay_ms\": 300}]}}";

        [Test]
        public void ComponentSaveThenLoadPutsTheSlotsAgentInItsPlace()
        {
            var npc = Npc(Graphs.Shop());
            npc.SendUserMessage("Hello.");  // before the agent exists: it waits for it
            Said("paused gate default");
            Result<SlotInfo>? saved = null;
            npc.Save("greeted", r => saved = r);
            Frames(() => saved != null);
            Assert.IsTrue(saved.Value.Ok, saved.Value.Error?.Message);
            Assert.AreEqual("greeted", saved.Value.Value.Slot);
            Assert.AreEqual(npc.Agent.Id, saved.Value.Value.AgentId);
            npc.Resume();
            Said("turn You said: Hello.");

            var before = npc.Agent;
            Result<TurnloomAgent>? loaded = null;
            npc.Load("greeted", r => loaded = r);
            Frames(() => loaded != null);
            Assert.IsTrue(loaded.Value.Ok, loaded.Value.Error?.Message);
            Assert.AreSame(loaded.Value.Value, npc.Agent);
            Assert.AreEqual(before.Id, npc.Agent.Id, "the same id, the slot's agent");
            Assert.IsTrue(before.IsDestroyed);
            var at = Frames(npc.Agent.WaitAsync());
            Assert.IsTrue(at.IsPaused, "it stands where the save was");
            Assert.AreEqual("gate", at.Pause.NodeName);

            // The component's events follow the loaded agent.
            npc.Resume();
            Said("turn You said: Hello.", 2);
            CollectionAssert.AreEqual(new[]
            {
                "paused gate default", "saved greeted", "turn You said: Hello.", "loaded greeted",
                "turn You said: Hello.",
            }, Events);

            // A second save, then the agent's slots, newest first; a slot of another agent is not
            // among them.
            Result<SlotInfo>? again = null;
            npc.Save("done", r => again = r);
            var other = Npc(Graphs.Trade());
            other.Save("theirs");
            Said("saved theirs");
            Frames(() => again != null);
            Result<List<SlotInfo>>? listed = null;
            npc.ListSlots(r => listed = r);
            Frames(() => listed != null);
            CollectionAssert.AreEqual(new[] { "done", "greeted" }, listed.Value.Value.ConvertAll(s => s.Slot));
            CollectionAssert.IsEmpty(Errors);
        }

        [Test]
        public void ComponentToolsAnswerTheLoadedAgentToo()
        {
            var npc = Npc(Graphs.Door(ToolCallDisposition.AwaitResult));
            var doors = new List<string>();
            npc.RegisterTool("open_door", call =>
            {
                doors.Add(call.GetString("door_id"));
                return "{\"opened\": true}";
            });
            npc.Save("fresh");  // idle, before any turn
            Said("saved fresh");
            npc.SendUserMessage(Graphs.OpenDoorCall);
            Frames(() => Turns.Count == 1);
            npc.Load("fresh");
            Said("loaded fresh");
            npc.SendUserMessage(Graphs.OpenDoorCall);
            Frames(() => Turns.Count == 2);
            CollectionAssert.AreEqual(new[] { "7", "7" }, doors, "the loaded agent's call was answered by the tool too");
            Assert.AreEqual(Turns[0], Turns[1], "the same reply, after the tool answered");
            CollectionAssert.IsEmpty(Errors);
        }

        [Test]
        public void ComponentCallsMadeWhileALoadReplacesTheAgentGoToTheLoadedOne()
        {
            var npc = Npc(Graphs.Shop());
            npc.Save("fresh");
            Said("saved fresh");
            npc.SendUserMessage("Hello.");
            Said("paused gate default");
            var before = npc.Agent;

            npc.Load("fresh");
            npc.SendUserMessage("Again.");  // made before the load's answer: it waits for it
            Said("paused gate default", 2);
            Assert.AreNotSame(before, npc.Agent);
            CollectionAssert.AreEqual(new[]
            {
                "saved fresh", "paused gate default",
                "turn ",  // the replaced agent's open turn, cancelled
                "loaded fresh", "paused gate default",
            }, Events);
            npc.Resume();
            Said("turn You said: Again.");
            CollectionAssert.IsEmpty(Errors);
        }

        [Test]
        public void ComponentRefusedLoadLeavesTheAgentAsItWas()
        {
            var npc = Npc(Graphs.Shop());
            Frames(() => npc.Agent != null);
            var agent = npc.Agent;
            Result<TurnloomAgent>? loaded = null;
            npc.Load("nowhere", r => loaded = r);
            npc.SendUserMessage("Hello.");  // waits for the load, then goes to the same agent
            Said("paused gate default");
            Assert.IsInstanceOf<InvalidParamValueException>(loaded.Value.Error);
            StringAssert.Contains("no save slot 'nowhere'", loaded.Value.Error.Message);
            Assert.AreEqual(1, Errors.Count);
            StringAssert.Contains("no save slot 'nowhere'", Errors[0]);
            Assert.AreSame(agent, npc.Agent);
            Assert.IsFalse(agent.IsDestroyed);
            npc.Resume();
            Said("turn You said: Hello.");
        }

        [Test]
        public void ComponentForkGoesOnAloneAndABusyAgentIsNotForkedOrSaved()
        {
            var npc = Npc(Graphs.Shop());
            npc.SendUserMessage("Hello.");
            Said("paused gate default");
            Result<TurnloomAgent>? forked = null;
            npc.Fork(r => forked = r);
            Frames(() => forked != null);
            var fork = forked.Value.Value;
            Assert.AreNotEqual(npc.Agent.Id, fork.Id);
            Assert.AreEqual("gate", Frames(fork.WaitAsync()).Pause.NodeName);
            Assert.AreEqual("You said: Hello.", Frames(fork.ResumeAsync()).Result.Text);
            CollectionAssert.AreEqual(new[] { "paused gate default" }, Events, "the fork's events are its own");
            Assert.IsTrue(Frames(npc.Agent.WaitAsync()).IsPaused, "the component's agent is untouched");
            npc.Resume();
            Said("turn You said: Hello.");

            var slow = Npc(Graphs.Say("slow"));
            slow.SendUserMessage("Tell me a story.");
            Result<TurnloomAgent>? busyFork = null;
            Result<SlotInfo>? busySave = null;
            slow.Fork(r => busyFork = r);
            slow.Save("story", r => busySave = r);
            Frames(() => busyFork != null && busySave != null);
            Assert.IsInstanceOf<AgentBusyException>(busyFork.Value.Error);
            Assert.IsInstanceOf<AgentBusyException>(busySave.Value.Error);
            Assert.AreEqual(2, Errors.Count, string.Join("\n", Events));
            Said("turn one two three four five six");
        }

        [Test]
        public void ComponentCallsWaitingForAnAgentThatCannotBeCreatedFail()
        {
            var npc = Npc(new GraphDescription().AddPause("gate", new PauseParams { DefaultExit = "nowhere" })
                .SetStartNode("gate").SetDefaultModelName("mock"));
            Result<SlotInfo>? saved = null;
            Result<TurnloomAgent>? forked = null;
            npc.Save("never", r => saved = r);
            npc.Fork(r => forked = r);
            Frames(() => saved != null && forked != null);
            Assert.IsNull(npc.Agent);
            Assert.IsInstanceOf<AgentException>(saved.Value.Error);
            Assert.AreSame(saved.Value.Error, forked.Value.Error, "both fail with the creation's error");
            Assert.AreEqual(1, Errors.Count, "onError said it once, for the creation");
        }
    }

    [TestFixture]
    public class AgentComponentNoStoreTests : ComponentTest
    {
        [Test]
        public void ComponentWithoutAStoreSaveAndLoadAreRefusedButAForkWorks()
        {
            var npc = Npc(Graphs.Shop());
            npc.SendUserMessage("Hello.");
            Said("paused gate default");
            var agent = npc.Agent;
            Result<SlotInfo>? saved = null;
            Result<TurnloomAgent>? loaded = null, forked = null;
            npc.Save("door", r => saved = r);
            npc.Load("door", r => loaded = r);
            npc.Fork(r => forked = r);
            Frames(() => saved != null && loaded != null && forked != null);
            Assert.IsInstanceOf<InvalidParamValueException>(saved.Value.Error);
            StringAssert.Contains("store", saved.Value.Error.Message);
            Assert.IsInstanceOf<InvalidParamValueException>(loaded.Value.Error);
            Assert.AreEqual(2, Errors.Count);
            Assert.AreSame(agent, npc.Agent);
            Assert.IsTrue(forked.Value.Ok, forked.Value.Error?.Message);
            Assert.AreEqual("You said: Hello.", Frames(forked.Value.Value.ResumeAsync()).Result.Text);
            npc.Resume();
            Said("turn You said: Hello.");
        }
    }
}
#endif
