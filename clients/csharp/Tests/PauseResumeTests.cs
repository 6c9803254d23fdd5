// Pausing, changing a later node's params while paused, and resuming (plain and jump).
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class PauseResumeTests : ServerTest
    {
        [Test]
        public void ParamChangedWhilePausedIsSeenByTheNextNode()
        {
            var agent = Create(Graphs.Shop());
            var events = new List<string>();
            var deltas = new List<string>();
            var finals = new List<string>();
            long pausedAgent = -1;
            agent.Paused += pause => events.Add("paused " + pause.NodeName + "->" + pause.PendingExit);
            agent.Resumed += (node, to) => events.Add("resumed " + node + " '" + to + "'");
            agent.AnswerText += (text, isDelta, isFinal) =>
            {
                if (isDelta) deltas.Add(text);
                if (isFinal) finals.Add(text);
            };
            agent.TurnComplete += result => events.Add("complete " + result.StatusName);
            Client.Paused += (agentId, node, exit) => pausedAgent = agentId;

            var step = Await(agent.SendMessageAsync("Do you sell swords?"));
            Assert.IsTrue(step.IsPaused);
            Assert.AreEqual("gate", step.Pause.NodeName);
            Assert.AreEqual("default", step.Pause.PendingExit);
            Assert.AreEqual("answer", step.Pause.PendingTarget);
            Assert.AreEqual(agent.Id, pausedAgent);
            Assert.AreSame(step.Pause, agent.CurrentPause);

            // The baseline, changed and sent whole (the original's GetNodeParamsBaseline + ChangeParams).
            var baseline = (GenerateParams)Await(agent.GetParamsAsync("answer"));
            Assert.AreEqual("You are Mira, a shopkeeper.", baseline.SystemPrompt);
            baseline.Template = "Trusted customer: {{human_message}}";
            Await(agent.ChangeParamsAsync("answer", baseline));

            step = Await(agent.ResumeAsync());
            Assert.IsTrue(step.IsComplete);
            Assert.AreEqual(TurnStatus.Success, step.Result.Status);
            Assert.AreEqual("You said: Trusted customer: Do you sell swords?", step.Result.Text);
            Assert.AreEqual(string.Concat(deltas), step.Result.Text);
            Assert.AreEqual(new[] { step.Result.Text }, finals.ToArray());
            Assert.AreEqual(new[] { "paused gate->default", "resumed gate ''", "complete success" }, events.ToArray());
            Assert.IsNull(agent.CurrentPause);
            Assert.AreSame(step.Result, agent.LastResult);
        }

        [Test]
        public void ChangeParamFieldsChangesOnlyTheNamedFields()
        {
            var agent = Create(Graphs.Shop());
            Await(agent.SendMessageAsync("one two three four"));
            Await(agent.ChangeParamFieldsAsync("answer", new Dictionary<string, object>
            {
                ["sampling"] = new Dictionary<string, object> { ["max_tokens"] = 3 },
            }));
            var now = (GenerateParams)Await(agent.GetParamsAsync("answer"));
            Assert.AreEqual(3, now.Sampling.MaxTokens);
            Assert.AreEqual(0.7, now.Sampling.Temperature);
            var step = Await(agent.ResumeAsync());
            Assert.AreEqual("You said: one", step.Result.Text);
            Assert.AreEqual(3, step.Result.TokensGenerated);
        }

        [Test]
        public void JumpResumeGoesWhereTheGameSays()
        {
            var agent = Create(Graphs.Trade());
            string jumpedTo = null;
            agent.Resumed += (node, to) => jumpedTo = to;
            var step = Await(agent.SendMessageAsync("I'll take the sword."));
            Assert.AreEqual("confirm", step.Pause.PendingTarget);
            step = Await(agent.ResumeAsync("decline"));
            Assert.AreEqual("Maybe later.", step.Result.Text);
            Assert.AreEqual("decline", jumpedTo);
        }

        [Test]
        public void CallbackFormsAnswerInsideUpdate()
        {
            var agent = Create(Graphs.Shop());
            Result<Step> sent = default(Result<Step>), resumed = default(Result<Step>);
            Result changed = default(Result);
            bool sentDone = false, changedDone = false, resumedDone = false;
            agent.SendMessage("hello", r => { sent = r; sentDone = true; });
            Pump.Until(Client, () => sentDone);
            Assert.IsTrue(sent.Ok);
            Assert.IsTrue(sent.Value.IsPaused);
            agent.ChangeParams("answer", new GenerateParams { Template = "Q: {{human_message}}", SystemPrompt = "x" }, r => { changed = r; changedDone = true; });
            Pump.Until(Client, () => changedDone);
            Assert.IsTrue(changed.Ok, changed.Error?.ToString());
            agent.Resume(r => { resumed = r; resumedDone = true; });
            Pump.Until(Client, () => resumedDone);
            Assert.AreEqual("You said: Q: hello", resumed.Value.Text());

            // A refusal arrives as Result.Error, typed.
            Result<Step> refused = default(Result<Step>);
            bool refusedDone = false;
            agent.Resume("no_such_node", r => { refused = r; refusedDone = true; });
            Pump.Until(Client, () => refusedDone);
            Assert.IsFalse(refused.Ok);
            Assert.IsInstanceOf<AgentNotPausedException>(refused.Error);
            Assert.AreEqual(ErrorCode.AgentNotPaused, refused.Error.Code);
        }

        [Test]
        public void EveryNodeTypeMakesTheRoundTrip()
        {
            var models = Await(Client.ListModelsAsync());
            Assert.AreEqual(new[] { "mock" }, models.Select(m => m.Name).ToArray());
            Assert.IsTrue(models[0].RendersTools);

            var pause = new PauseParams { PauseTimeoutMs = 1500, DefaultExit = "gen", TimeoutExit = "canned" };
            var gen = new GenerateParams
            {
                SystemPrompt = "Be brief.", Template = "Q: {{human_message}}", Placement = Placement.BeforeUserAsSystem,
                Stream = false, DefaultExit = "tool",
                Sampling = new SamplingParams { Temperature = 0.5, TopP = 0.9, TopK = 10, MinP = 0.1, RepeatPenalty = 1.2, MaxTokens = 64, Seed = 42, TimeoutMs = 1000 },
                History = new HistoryParams { Trim = false, TrimTo = 0.5, KeepFirst = 2, MaxPromptTokens = 100 },
            };
            var canned = new CannedResponseParams("one", "two") { Selection = Selection.Cycle };
            var tool = new ToolCallParams
            {
                Tools = { new ToolDefinition("set_light", "Turn a light on or off.",
                    new ToolParamDefinition("name", "string", "Which.", "kitchen", "hall"), new ToolParamDefinition("on", "boolean", "")) },
                Disposition = ToolCallDisposition.NotifyAndAcknowledge, Mode = ToolCallMode.DetectOnly,
                SystemPrompt = "You control lights.", AcknowledgeText = "done", PauseTimeoutMs = 250,
                ToolCalledExit = "canned", NoToolCalledExit = "canned", TimeoutExit = "canned", Decision = "generate",
            };
            var graph = new GraphDescription().AddPause("pause", pause).AddGenerate("gen", gen)
                .AddCannedResponse("canned", canned).AddToolCall("tool", tool).SetStartNode("pause").SetDefaultModelName("mock");
            var agent = Create(graph, new AgentOptions { EnableDiagnostics = true, MaxStepsPerTurn = 8 });
            var codec = new MsgPackCodec();
            foreach (var sent in new KeyValuePair<string, NodeParams>[] { new KeyValuePair<string, NodeParams>("pause", pause),
                new KeyValuePair<string, NodeParams>("gen", gen), new KeyValuePair<string, NodeParams>("canned", canned),
                new KeyValuePair<string, NodeParams>("tool", tool) })
            {
                var got = Await(agent.GetParamsAsync(sent.Key));
                Assert.AreEqual(sent.Value.GetType(), got.GetType());
                CollectionAssert.AreEqual(codec.EncodeToArray(sent.Value.ToWire()), codec.EncodeToArray(got.ToWire()), sent.Key);
            }
            Await(agent.SendMessageAsync("hi"));
            var step = Await(agent.ResumeAsync());
            Assert.IsNotNull(step.Result.DebugInfo);
            Assert.IsTrue(step.Result.DebugInfo.ContainsKey("nodes"));
        }
    }

    static class StepText
    {
        public static string Text(this Step step) => step.Result?.Text;
    }
}
