// What the tests share: a real `python -m turnloom serve` on a free loopback port, pumping the
// client the way a game's Update() does, and the graphs the scenarios drive.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Turnloom.Tests
{
    /// <summary>`python -m turnloom serve --mock [SCRIPT] --port 0`, stopped by Dispose.</summary>
    public sealed class ServerProcess : IDisposable
    {
        static readonly Regex Ready = new Regex(@"^turnloom: protocol v1 on (\S+):(\d+)$");
        readonly Process process;
        readonly List<string> temporaryFiles = new List<string>();

        /// <summary>The port it listens on.</summary>
        public int Port { get; }

        /// <summary>The Python with the turnloom package: $TURNLOOM_PYTHON, else the checkout's
        /// .venv, else python3.</summary>
        public static string Python()
        {
            string python = Environment.GetEnvironmentVariable("TURNLOOM_PYTHON");
            if (!string.IsNullOrEmpty(python)) return python;
            string venv = Path.Combine(RepositoryRoot(), ".venv", "bin", "python");
            return File.Exists(venv) ? venv : "python3";
        }

        static string RepositoryRoot()
        {
            string root = Environment.GetEnvironmentVariable("TURNLOOM_REPO");
            return string.IsNullOrEmpty(root) ? Directory.GetCurrentDirectory() : root;
        }

        /// <summary>Starts a server; <paramref name="script"/> is a mock script as JSON (null:
        /// the echoing mock), <paramref name="mock"/> false serves the catalog's real model.</summary>
        public ServerProcess(string script = null, bool mock = true, params string[] more)
        {
            var args = new List<string> { "-m", "turnloom", "serve" };
            if (mock) args.Add("--mock");
            if (script != null)
            {
                string path = Path.Combine(Path.GetTempPath(), "turnloom-script-" + Guid.NewGuid().ToString("N") + ".json");
                File.WriteAllText(path, script);
                temporaryFiles.Add(path);
                args.Add(path);
            }
            args.AddRange(new[] { "--port", "0", "--log-level", "error" });
            args.AddRange(more);
            var start = new ProcessStartInfo(Python(), string.Join(" ", args.ConvertAll(Quote)))
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = false,
                WorkingDirectory = RepositoryRoot(),
            };
            start.EnvironmentVariables["PYTHONUNBUFFERED"] = "1";
            process = Process.Start(start);
            string line = process.StandardOutput.ReadLine() ?? "";
            var found = Ready.Match(line);
            if (!found.Success)
            {
                Dispose();
                throw new InvalidOperationException("the server did not start (" + Python() + "): '" + line + "'");
            }
            Port = int.Parse(found.Groups[2].Value);
        }

        static string Quote(string word) => "\"" + word.Replace("\"", "\\\"") + "\"";

        /// <summary>SIGKILL: the connection drops without a goodbye.</summary>
        public void Kill()
        {
            if (!process.HasExited) process.Kill();
            process.WaitForExit();
        }

        /// <summary>SIGTERM: the graceful shutdown (open turns cancelled, then 2001).</summary>
        public void Terminate()
        {
            if (process.HasExited) return;
            using (var kill = Process.Start(new ProcessStartInfo("kill", "-TERM " + process.Id) { UseShellExecute = false }))
                kill.WaitForExit();
        }

        /// <summary>Waits for the process to exit (after Terminate).</summary>
        public bool WaitForExit(int ms) => process.WaitForExit(ms);

        /// <summary>Kills it if it still runs, and removes its script.</summary>
        public void Dispose()
        {
            try
            {
                if (!process.HasExited) process.Kill();
                process.WaitForExit();
            }
            catch (InvalidOperationException) { }
            process.Dispose();
            foreach (var file in temporaryFiles) File.Delete(file);
        }
    }

    /// <summary>Pumps a client as a game loop does, until a task or a condition is done.</summary>
    public static class Pump
    {
        // A safety net against a hang, not a measurement: a correct test is done long before.
        const int GiveUpMs = 60000;

        /// <summary>Calls Update() until <paramref name="task"/> is done; its value (or throws
        /// its exception, unwrapped).</summary>
        public static T Until<T>(TurnloomClient client, Task<T> task)
        {
            Until(client, () => task.IsCompleted);
            try
            {
                return task.Result;
            }
            catch (AggregateException e) when (e.InnerExceptions.Count == 1)
            {
                throw e.InnerException;
            }
        }

        /// <summary>The same for a Task without a value.</summary>
        public static void Until(TurnloomClient client, Task task)
        {
            Until(client, () => task.IsCompleted);
            try
            {
                task.Wait();
            }
            catch (AggregateException e) when (e.InnerExceptions.Count == 1)
            {
                throw e.InnerException;
            }
        }

        /// <summary>Calls Update() until <paramref name="done"/> holds.</summary>
        public static void Until(TurnloomClient client, Func<bool> done)
        {
            var watch = Stopwatch.StartNew();
            while (!done())
            {
                if (watch.ElapsedMilliseconds > GiveUpMs) throw new InvalidOperationException("gave up waiting");
                if (client.Update() == 0) Thread.Sleep(1);
            }
        }

        /// <summary>The exception <paramref name="task"/> fails with (pumping until it does).</summary>
        public static TException Fails<TException>(TurnloomClient client, Task task) where TException : Exception
        {
            Until(client, () => task.IsCompleted);
            Assert.IsTrue(task.IsFaulted, "the call succeeded; expected " + typeof(TException).Name);
            var error = task.Exception.InnerException;
            Assert.IsInstanceOf<TException>(error, error.ToString());
            return (TException)error;
        }
    }

    /// <summary>A fresh server and a connected client per test.</summary>
    public abstract class ServerTest
    {
        /// <summary>The test's server.</summary>
        protected ServerProcess Server;
        /// <summary>The test's client, connected.</summary>
        protected TurnloomClient Client;

        /// <summary>The mock script (JSON) the server plays; null: the echoing mock.</summary>
        protected virtual string Script => null;

        /// <summary>Serve with --store: a fresh SQLite file per test, removed afterwards.</summary>
        protected virtual bool WithStore => false;

        string storeFolder;

        /// <summary>Starts the server, connects.</summary>
        [SetUp]
        public void StartServer()
        {
            var more = new List<string>();
            if (WithStore)
            {
                storeFolder = Path.Combine(Path.GetTempPath(), "turnloom-store-" + Guid.NewGuid().ToString("N"));
                Directory.CreateDirectory(storeFolder);
                more.Add("--store");
                more.Add(Path.Combine(storeFolder, "store.sqlite"));
            }
            Server = new ServerProcess(Script, true, more.ToArray());
            Client = Connect();
        }

        /// <summary>Closes the client, stops the server, removes its store.</summary>
        [TearDown]
        public void StopServer()
        {
            Client?.Dispose();
            Server?.Dispose();
            if (storeFolder != null) Directory.Delete(storeFolder, true);
            storeFolder = null;
        }

        /// <summary>Another connected client of the same server.</summary>
        protected TurnloomClient Connect()
        {
            var client = new TurnloomClient(new ClientOptions { Port = Server.Port });
            Pump.Until(client, client.ConnectAsync());
            return client;
        }

        /// <summary>Pumps Client until the task is done.</summary>
        protected T Await<T>(Task<T> task) => Pump.Until(Client, task);

        /// <summary>Pumps Client until the task is done.</summary>
        protected void Await(Task task) => Pump.Until(Client, task);

        /// <summary>Pumps Client until the task fails; its exception.</summary>
        protected TException Fails<TException>(Task task) where TException : Exception => Pump.Fails<TException>(Client, task);

        /// <summary>A new agent of Client.</summary>
        protected TurnloomAgent Create(GraphDescription graph, AgentOptions options = null) =>
            Await(Client.CreateAgentAsync(graph, options));
    }

    /// <summary>The graphs of the scenarios (the same as the C++ client's tests).</summary>
    public static class Graphs
    {
        /// <summary>gate (Pause) -> answer (Generate: "You said: …" on the mock); slow is the
        /// timeout exit's target when given.</summary>
        public static GraphDescription Shop(long pauseTimeoutMs = 0, string timeoutExit = "") =>
            new GraphDescription()
                .AddPause("gate", new PauseParams { DefaultExit = "answer", PauseTimeoutMs = pauseTimeoutMs, TimeoutExit = timeoutExit })
                .AddGenerate("answer", new GenerateParams { SystemPrompt = "You are Mira, a shopkeeper." })
                .AddCannedResponse("slow", new CannedResponseParams("Too slow."))
                .SetStartNode("gate")
                .SetDefaultModelName("mock");

        /// <summary>offer (Pause) -> confirm "Deal.", or a jump to decline "Maybe later.".</summary>
        public static GraphDescription Trade() =>
            new GraphDescription()
                .AddPause("offer", new PauseParams { DefaultExit = "confirm" })
                .AddCannedResponse("confirm", new CannedResponseParams("Deal."))
                .AddCannedResponse("decline", new CannedResponseParams("Maybe later."))
                .SetStartNode("offer")
                .SetDefaultModelName("mock");

        /// <summary>detect (ToolCall declaring open_door(door_id), detect_only) -> answer (Generate).</summary>
        public static GraphDescription Door(ToolCallDisposition disposition) =>
            new GraphDescription()
                .AddToolCall("detect", new ToolCallParams
                {
                    Tools = { new ToolDefinition("open_door", "Open a door.", new ToolParamDefinition("door_id", "string", "Which door.")) },
                    Disposition = disposition,
                    Mode = ToolCallMode.DetectOnly,
                    ToolCalledExit = "answer",
                    NoToolCalledExit = "answer",
                })
                .AddGenerate("answer", new GenerateParams())
                .SetStartNode("detect")
                .SetDefaultModelName("mock");

        /// <summary>One streaming Generate node "say".</summary>
        public static GraphDescription Say(string model = "mock") =>
            new GraphDescription().AddGenerate("say", new GenerateParams()).SetStartNode("say").SetDefaultModelName(model);

        /// <summary>The echoing mock reads this message as a call of open_door(door_id="7").</summary>
        public const string OpenDoorCall = "{\"name\": \"open_door\", \"arguments\": {\"door_id\": \"7\"}}";
    }
}
