// Client-side request timeouts (1003) on a virtual clock the test moves by hand: a call whose
// answer does not come in time fails on the next Update(), exactly once, and the connection
// stays usable.
using System.Collections.Generic;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class TimeoutTests : ServerTest
    {
        long now;  // the virtual clock, in ms
        TurnloomClient timed;

        [SetUp]
        public void ConnectOnTheVirtualClock()
        {
            now = 0;
            timed = new TurnloomClient(new ClientOptions { Port = Server.Port, Clock = () => now, RequestTimeoutMs = 1000 });
            Pump.Until(timed, timed.ConnectAsync());
        }

        [TearDown]
        public void CloseTheTimedClient() => timed?.Dispose();

        [Test]
        public void AStepThatDoesNotComeTimesOutWith1003()
        {
            var agent = Pump.Until(timed, timed.CreateAgentAsync(Graphs.Shop()));
            Assert.IsTrue(Pump.Until(timed, agent.SendMessageAsync("hello")).IsPaused);
            var end = agent.WaitCompleteAsync();  // the turn waits at its pause: no end comes
            Pump.Until(timed, timed.ListModelsAsync());  // replies in order: WaitComplete's is in
            now = 999;
            timed.Update();
            Assert.IsFalse(end.IsCompleted, "within its limit");
            now = 1000;
            timed.Update();
            var error = Pump.Fails<RequestTimeoutException>(timed, end);
            Assert.AreEqual(ErrorCode.Timeout, error.Code);
            StringAssert.Contains("wait_complete got no answer within 1000 ms", error.Reason);

            // The connection stays usable, and the turn was never touched.
            Assert.IsTrue(timed.IsConnected);
            var done = Pump.Until(timed, agent.ResumeAsync());
            Assert.AreEqual("You said: hello", done.Result.Text);
        }

        [Test]
        public void ATimedOutCallbackIsAnsweredOnceEvenWhenTheAnswerComesLater()
        {
            var agent = Pump.Until(timed, timed.CreateAgentAsync(Graphs.Shop(), new AgentOptions { InputPolicy = InputPolicy.Enqueue }));
            Pump.Until(timed, agent.SendMessageAsync("first"));
            var answers = new List<Result<Step>>();
            agent.SendMessage("second", result => answers.Add(result));  // queued behind the pause
            Pump.Until(timed, agent.GetStateAsync());
            Assert.IsEmpty(answers);
            now += 1000;
            timed.Update();
            Assert.AreEqual(1, answers.Count);
            Assert.IsInstanceOf<RequestTimeoutException>(answers[0].Error);

            // The server still runs the queued message once the first turn ends: its step comes
            // and is dropped (the caller had its answer), and the agent's waiters stay in order.
            timed.RequestTimeoutMs = 0;
            Assert.AreEqual("You said: first", Pump.Until(timed, agent.ResumeAsync()).Result.Text);
            var second = Pump.Until(timed, agent.WaitAsync());
            Assert.IsTrue(second.IsPaused);
            Assert.AreEqual("You said: second", Pump.Until(timed, agent.ResumeAsync()).Result.Text);
            Assert.AreEqual(1, answers.Count, "answered once");
        }
    }
}
