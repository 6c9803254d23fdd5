// The game thread: events, callbacks and Task continuations run only on the thread that calls
// Update() (or on the SynchronizationContext), never on the socket's reader thread.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class ThreadTests
    {
        ServerProcess server;

        [SetUp]
        public void Start() => server = new ServerProcess();

        [TearDown]
        public void Stop() => server.Dispose();

        // Runs `scenario` on a "game" thread of its own (which pumps), not the test's thread.
        static void OnGameThread(Action scenario, out int gameThread)
        {
            Exception failure = null;
            int id = -1;
            var game = new Thread(() =>
            {
                id = Thread.CurrentThread.ManagedThreadId;
                try { scenario(); }
                catch (Exception e) { failure = e; }
            });
            game.Start();
            game.Join();
            gameThread = id;
            if (failure != null) System.Runtime.ExceptionServices.ExceptionDispatchInfo.Capture(failure).Throw();
        }

        [Test]
        public void CallbacksRunOnlyOnThePumpingThread()
        {
            var seen = new ConcurrentBag<int>();
            int calls = 0;
            Action mark = () =>
            {
                seen.Add(Thread.CurrentThread.ManagedThreadId);
                Interlocked.Increment(ref calls);
            };
            int gameThread;
            OnGameThread(() =>
            {
                var client = new TurnloomClient(new ClientOptions { Port = server.Port });
                client.Paused += (a, n, e) => mark();
                Pump.Until(client, client.ConnectAsync().ContinueWith(t => mark(), TaskContinuationOptions.ExecuteSynchronously));
                var agent = Pump.Until(client, client.CreateAgentAsync(Graphs.Door(ToolCallDisposition.AwaitResult)));
                agent.Paused += p => mark();
                agent.Resumed += (n, r) => mark();
                agent.AnswerText += (t, d, f) => mark();
                agent.ToolCall += c => mark();
                agent.TurnComplete += r => mark();
                agent.RegisterTool("open_door", call => { mark(); return "{}"; });

                // Nothing is delivered until Update() is called: the reply waits in the queue.
                bool answered = false;
                agent.SendMessage(Graphs.OpenDoorCall, r => { mark(); answered = true; });
                var watch = System.Diagnostics.Stopwatch.StartNew();
                while (client.PendingCount < 1 && watch.ElapsedMilliseconds < 30000) Thread.Sleep(1);
                Assert.GreaterOrEqual(client.PendingCount, 1, "the reply arrived on the reader thread");
                Assert.IsFalse(answered, "delivered without Update()");
                Pump.Until(client, () => answered);

                var changed = agent.ChangeParamFieldsAsync("answer", new Dictionary<string, object> { ["template"] = "{{human_message}}!" })
                    .ContinueWith(t => mark(), TaskContinuationOptions.ExecuteSynchronously);
                Pump.Until(client, changed);
                Pump.Until(client, client.DisconnectAsync());
            }, out gameThread);
            Assert.Greater(calls, 8);
            CollectionAssert.AreEqual(new[] { gameThread }, new HashSet<int>(seen));
        }

        // A SynchronizationContext of one dedicated thread (as Unity's main thread is).
        sealed class SingleThreadContext : SynchronizationContext, IDisposable
        {
            readonly BlockingCollection<KeyValuePair<SendOrPostCallback, object>> work =
                new BlockingCollection<KeyValuePair<SendOrPostCallback, object>>();
            readonly Thread thread;

            public int ThreadId => thread.ManagedThreadId;

            public SingleThreadContext()
            {
                thread = new Thread(() =>
                {
                    SetSynchronizationContext(this);
                    foreach (var item in work.GetConsumingEnumerable()) item.Key(item.Value);
                }) { IsBackground = true };
                thread.Start();
            }

            public override void Post(SendOrPostCallback d, object state) => work.Add(new KeyValuePair<SendOrPostCallback, object>(d, state));

            public void Dispose() => work.CompleteAdding();
        }

        [Test]
        public void SynchronizationContextModeDeliversOnTheContext()
        {
            using (var context = new SingleThreadContext())
            {
                var seen = new ConcurrentBag<int>();
                var client = new TurnloomClient(new ClientOptions
                {
                    Port = server.Port, Dispatch = DispatchMode.SynchronizationContext, Context = context,
                });
                var done = new ManualResetEventSlim();
                Step last = null;
                bool connectedOk = false;
                // No Update() anywhere in this test: the context pumps.
                client.Connect(connected =>
                {
                    seen.Add(Thread.CurrentThread.ManagedThreadId);
                    connectedOk = connected.Ok;
                    client.CreateAgent(Graphs.Shop(), null, created =>
                    {
                        seen.Add(Thread.CurrentThread.ManagedThreadId);
                        var agent = created.Value;
                        agent.Paused += p => seen.Add(Thread.CurrentThread.ManagedThreadId);
                        agent.AnswerText += (t, d, f) => seen.Add(Thread.CurrentThread.ManagedThreadId);
                        agent.SendMessage("hi", sent =>
                        {
                            seen.Add(Thread.CurrentThread.ManagedThreadId);
                            agent.Resume(resumed =>
                            {
                                seen.Add(Thread.CurrentThread.ManagedThreadId);
                                last = resumed.Value;
                                done.Set();
                            });
                        });
                    });
                });
                Assert.IsTrue(done.Wait(60000), "the scenario finished");
                Assert.IsTrue(connectedOk);
                Assert.AreEqual("You said: hi", last.Result.Text);
                CollectionAssert.AreEqual(new[] { context.ThreadId }, new HashSet<int>(seen));
                client.Dispose();
            }
        }
    }
}
