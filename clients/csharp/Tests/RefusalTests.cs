// Refused requests: the exact exception type and code, and a refused request changes nothing.
using System.Collections.Generic;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class RefusalTests : ServerTest
    {
        [Test]
        public void RefusalsLeaveTheTurnPaused()
        {
            var agent = Create(Graphs.Shop());
            Assert.IsTrue(Await(agent.SendMessageAsync("hello")).IsPaused);

            System.Action StillPaused = () =>
            {
                var now = Await(agent.WaitAsync());
                Assert.IsTrue(now.IsPaused);
                Assert.AreEqual("gate", now.Pause.NodeName);
            };

            Assert.AreEqual(ErrorCode.AgentBusy, Fails<AgentBusyException>(agent.SendMessageAsync("again")).Code);  // 3004
            StillPaused();
            var unknown = Fails<UnknownNodeException>(agent.ResumeAsync("no_such_node"));  // 3005
            Assert.AreEqual(ErrorCode.UnknownNode, unknown.Code);
            StringAssert.Contains("no_such_node", unknown.Reason);
            StillPaused();
            // default_exit is structural: changing it is 3006.
            Fails<ParamNotMutableException>(agent.ChangeParamsAsync("gate", new PauseParams { DefaultExit = "slow" }));
            StillPaused();
            Fails<InvalidParamValueException>(agent.ChangeParamFieldsAsync("answer", new Dictionary<string, object> { ["stream"] = 1 }));  // 3007
            Fails<UnknownNodeException>(agent.GetParamsAsync("no_such_node"));
            // A tool result on a plain pause: 3016, still paused.
            Fails<InvalidToolResultsException>(agent.ResumeWithToolResultAsync(new ToolResult("c00000000", "{}")));
            StillPaused();

            var step = Await(agent.ResumeAsync());
            Assert.AreEqual(TurnStatus.Success, step.Result.Status);
            var notPaused = Fails<AgentNotPausedException>(agent.ResumeAsync());  // 3012
            Assert.AreEqual(ErrorCode.AgentNotPaused, notPaused.Code);
            Assert.IsInstanceOf<AgentException>(notPaused, "one base per code family");

            Await(agent.DestroyAsync());
            Fails<AgentAlreadyDestroyedException>(agent.SendMessageAsync("gone"));  // 3002
        }

        [Test]
        public void GraphErrorsAreRefusedWithTheirCodes()
        {
            Fails<GraphCompilationFailedException>(Client.CreateAgentAsync(Graphs.Shop().SetStartNode("nowhere")));  // 3003
            var dangling = new GraphDescription().AddPause("gate", new PauseParams { DefaultExit = "nowhere" }).SetStartNode("gate");
            Fails<InvalidExitTargetException>(Client.CreateAgentAsync(dangling));  // 3008
            var noLines = new GraphDescription().AddCannedResponse("say", new CannedResponseParams()).SetStartNode("say");
            Fails<InvalidParamValueException>(Client.CreateAgentAsync(noLines));  // 3007
            // The server's store is off: a durable agent is 3007 too.
            Fails<InvalidParamValueException>(Client.CreateAgentAsync(Graphs.Shop(), new AgentOptions { Durable = true }));
        }

        [Test]
        public void FrameOverTheLimitIsRefusedBeforeSending()
        {
            var agent = Create(Graphs.Shop());
            Fails<FrameTooLargeException>(agent.SendMessageAsync(new string('a', 2 * 1024 * 1024)));  // 5003, nothing sent
            var step = Await(agent.SendMessageAsync("hello"));
            Assert.IsTrue(step.IsPaused, "the connection is still usable");
        }
    }
}
