// Tool calls: an AwaitResult pause answered with results, RegisterTool's automatic resume, a
// refused batch kept for RetryPausedToolBatch, and 3016 on a bad batch then a good one.
using System.Collections.Generic;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class ScriptedToolCallTests : ServerTest
    {
        // The first generation (detect's decision) is the call; then the mock echoes.
        protected override string Script =>
            "{\"steps\": [{\"tool_call\": {\"name\": \"open_door\", \"arguments\": {\"door_id\": \"7\"}}}, \"The door is open.\"]}";

        [Test]
        public void ToolCallAnsweredWithResults()
        {
            var agent = Create(Graphs.Door(ToolCallDisposition.AwaitResult));
            var seen = new List<ToolCall>();
            agent.ToolCall += call => seen.Add(call);
            var step = Await(agent.SendMessageAsync("Open the door, please."));
            Assert.IsTrue(step.IsPaused);
            Assert.IsTrue(step.Pause.AwaitsResults);
            Assert.AreEqual("tool_called", step.Pause.PendingExit);
            Assert.AreEqual(1, step.Pause.PendingCalls.Count);
            var pending = step.Pause.PendingCalls[0];
            Assert.AreEqual("open_door", pending.ToolName);
            Assert.AreEqual("detect", pending.NodeName);
            Assert.AreEqual("7", pending.GetString("door_id"));
            Assert.AreEqual(1, seen.Count);
            Assert.AreEqual(pending.CallId, seen[0].CallId);
            Assert.AreEqual("await_result", seen[0].Disposition);
            StringAssert.Contains("\"door_id\"", seen[0].ArgumentsJson);

            step = Await(agent.ResumeWithToolResultAsync(new ToolResult(pending.CallId, "{\"opened\": true}")));
            Assert.AreEqual(TurnStatus.Success, step.Result.Status);
            Assert.AreEqual("The door is open.", step.Result.Text);
        }
    }

    [TestFixture]
    public class ToolTests : ServerTest
    {
        [Test]
        public void RegisterToolAnswersAndResumesOnItsOwn()
        {
            var agent = Create(Graphs.Door(ToolCallDisposition.AwaitResult));
            var doors = new List<string>();
            agent.RegisterTool("open_door", call =>
            {
                doors.Add(call.GetString("door_id"));
                return "{\"opened\": true}";
            });
            // The caller waits on through the automatic resume, to the completion.
            var step = Await(agent.SendMessageAsync(Graphs.OpenDoorCall));
            Assert.IsTrue(step.IsComplete);
            Assert.AreEqual(TurnStatus.Success, step.Result.Status);
            Assert.AreEqual(new[] { "7" }, doors.ToArray());
            Assert.IsFalse(agent.HasPausedToolBatch);
            Fails<NoPausedToolBatchException>(agent.RetryPausedToolBatchAsync());

            // Pause disposition: the handler runs for its side effect; the resume carries no results.
            var pausing = Create(Graphs.Door(ToolCallDisposition.Pause));
            int sideEffects = 0;
            pausing.RegisterTool("open_door", call => { sideEffects++; return "ignored"; });
            step = Await(pausing.SendMessageAsync(Graphs.OpenDoorCall));
            Assert.IsTrue(step.IsComplete);
            Assert.AreEqual(1, sideEffects);
        }

        [Test]
        public void RefusedAutomaticResumeKeepsTheBatch()
        {
            var agent = Create(Graphs.Door(ToolCallDisposition.AwaitResult));
            // A result over 64 KiB: the server refuses the automatic resume (3016).
            agent.RegisterTool("open_door", call => new string('x', 70000));
            var step = Await(agent.SendMessageAsync(Graphs.OpenDoorCall));
            Assert.IsTrue(step.IsPaused, "the waiter gets the pause back");
            Assert.IsTrue(agent.HasPausedToolBatch);
            var refused = Fails<InvalidToolResultsException>(agent.RetryPausedToolBatchAsync());
            Assert.AreEqual(ErrorCode.InvalidToolResults, refused.Code);
            Assert.IsTrue(agent.HasPausedToolBatch, "still kept for another try");
            step = Await(agent.ResumeWithToolResultAsync(new ToolResult(step.Pause.PendingCalls[0].CallId, "small")));
            Assert.AreEqual(TurnStatus.Success, step.Result.Status);
            Assert.IsFalse(agent.HasPausedToolBatch);
        }

        [Test]
        public void BadBatchIs3016ThenARetrySucceeds()
        {
            var agent = Create(Graphs.Door(ToolCallDisposition.AwaitResult));
            var step = Await(agent.SendMessageAsync(Graphs.OpenDoorCall));
            string callId = step.Pause.PendingCalls[0].CallId;

            Fails<InvalidToolResultsException>(agent.ResumeAsync());  // no results
            var unknown = Fails<InvalidToolResultsException>(agent.ResumeWithToolResultAsync(new ToolResult("c_unknown", "x")));
            StringAssert.Contains(callId, unknown.Reason);
            Fails<InvalidToolResultsException>(agent.ResumeWithToolResultsAsync(new[] { new ToolResult(callId, "x"), new ToolResult(callId, "y") }));
            Assert.IsTrue(Await(agent.WaitAsync()).IsPaused, "a refused resume changes nothing");

            step = Await(agent.ResumeWithToolResultsAsync(new[] { new ToolResult(callId, "{\"ok\": true}") }));
            Assert.AreEqual(TurnStatus.Success, step.Result.Status);
        }

        [Test]
        public void ToolResultFromTheToolCallEventInACallback()
        {
            var agent = Create(Graphs.Door(ToolCallDisposition.AwaitResult));
            Result<Step> answer = default(Result<Step>);
            bool answered = false;
            agent.ToolCall += call =>
                agent.ResumeWithToolResult(new ToolResult(call.CallId, "{\"opened\": true}"), r => { answer = r; answered = true; });
            var step = Await(agent.SendMessageAsync(Graphs.OpenDoorCall));
            Assert.IsTrue(step.IsPaused);
            var done = Await(agent.WaitCompleteAsync());
            Assert.AreEqual(TurnStatus.Success, done.Status);
            Pump.Until(Client, () => answered);
            Assert.IsTrue(answer.Ok, answer.Error?.ToString());
            Assert.IsTrue(answer.Value.IsComplete);
        }
    }
}
