// The client's end of one session (docs/protocol.md sections 2 and 9): connect and configure,
// send requests from any thread, and, inside Update() on the game thread, match replies to
// requests by request_id and route events to agents by agent_id.
using System;
using System.Collections.Generic;
using System.Runtime.ExceptionServices;
using System.Threading;
using System.Threading.Tasks;

namespace Turnloom
{
    /// <summary>How to reach the server and where to deliver events.</summary>
    public sealed class ClientOptions
    {
        /// <summary>The server's host (python -m turnloom serve listens on 127.0.0.1).</summary>
        public string Host = "127.0.0.1";
        /// <summary>Its port.</summary>
        public int Port = 7411;
        /// <summary>Free text for the server's logs.</summary>
        public string ClientName = "turnloom-csharp";
        /// <summary>The server's auth key, when it has one (send it only over TLS or loopback).</summary>
        public string AuthKey;
        /// <summary>TLS (off by default).</summary>
        public TlsOptions Tls = new TlsOptions();
        /// <summary>How long connecting and the session handshake may take.</summary>
        public int ConnectTimeoutMs = 10000;
        /// <summary>How long a call may wait for its answer (a SendMessage or resume: for its
        /// step) before it fails with RequestTimeoutException (1003); 0 = no limit. Change it
        /// later with <see cref="TurnloomClient.RequestTimeoutMs"/>.</summary>
        public int RequestTimeoutMs;
        /// <summary>The clock of those limits, in milliseconds (default: a monotonic one). Tests
        /// give a virtual clock they move by hand.</summary>
        public Func<long> Clock;
        /// <summary>The MessagePack codec (default: the built-in strict one).</summary>
        public IMessageCodec Codec;
        /// <summary>Where events and callbacks run.</summary>
        public DispatchMode Dispatch = DispatchMode.Update;
        /// <summary>The context of DispatchMode.SynchronizationContext (default: the current one).</summary>
        public SynchronizationContext Context;
    }

    /// <summary>Options of CreateAgent.</summary>
    public sealed class AgentOptions
    {
        /// <summary>Completions then carry DebugInfo.</summary>
        public bool EnableDiagnostics;
        /// <summary>Nodes one turn may walk (0 = the server's default, 64).</summary>
        public int MaxStepsPerTurn;
        /// <summary>A durable agent: kept when the session closes, attachable with its
        /// ResumeToken (only on a server started with --store).</summary>
        public bool Durable;
        /// <summary>What a message does while a turn is open (default Reject: AgentBusyException).</summary>
        public InputPolicy InputPolicy = InputPolicy.Reject;
    }

    /// <summary>
    /// A connection to a turnloom server. Calls may be made from any thread; every event,
    /// callback and Task completion is delivered on the thread that calls <see cref="Update"/>
    /// (or, in DispatchMode.SynchronizationContext, on that context).
    /// </summary>
    public sealed class TurnloomClient : IDisposable
    {
        const int ProtocolVersion = 1;

        readonly ClientOptions options;
        readonly IMessageCodec codec;
        readonly Inbox inbox;
        readonly Deadlines deadlines = new Deadlines();
        readonly Func<long> clock;
        readonly object gate = new object();  // guards pending, refusal, nextId
        readonly Dictionary<long, Action<Dictionary<string, object>, TurnloomException>> pending =
            new Dictionary<long, Action<Dictionary<string, object>, TurnloomException>>();
        readonly Dictionary<long, TurnloomAgent> agents = new Dictionary<long, TurnloomAgent>();  // game thread
        FrameConnection connection;
        TurnloomException refusal = new ConnectionDroppedException("not connected");
        long nextId;
        bool closing, ended;  // ended: Update() has handled the end of the connection
        Waiter<Unit> disconnected;
        ExceptionDispatchInfo callbackFailure;

        /// <summary>A client for <paramref name="options"/> (not connected yet).</summary>
        public TurnloomClient(ClientOptions options = null)
        {
            this.options = options ?? new ClientOptions();
            codec = this.options.Codec ?? new MsgPackCodec();
            if (this.options.Clock != null) clock = this.options.Clock;
            else
            {
                var watch = System.Diagnostics.Stopwatch.StartNew();
                clock = () => watch.ElapsedMilliseconds;
            }
            RequestTimeoutMs = this.options.RequestTimeoutMs;
            SynchronizationContext context = null;
            if (this.options.Dispatch == DispatchMode.SynchronizationContext)
                context = this.options.Context ?? SynchronizationContext.Current
                    ?? throw new InvalidOperationException("DispatchMode.SynchronizationContext needs a context: none is current");
            inbox = new Inbox(context, () => Update());
        }

        /// <summary>The session's id (after connecting).</summary>
        public long SessionId { get; private set; }

        /// <summary>Connected and not lost or closed.</summary>
        public bool IsConnected { get { lock (gate) return refusal == null; } }

        /// <summary>Items waiting for the next Update().</summary>
        public int PendingCount => inbox.Count;

        /// <summary>The limit of calls made from now on (ms; 0 = none): past it a call fails with
        /// RequestTimeoutException (1003) on the next Update(). The request may still be carried
        /// out by the server: check the agent's state (GetStateAsync) before retrying a resume.</summary>
        public int RequestTimeoutMs { get; set; }

        /// <summary>Any agent of this client paused: (agentId, nodeName, pendingExit).</summary>
        public event Action<long, string, string> Paused;

        /// <summary>The connection was lost (not raised by DisconnectAsync).</summary>
        public event Action<TurnloomException> Disconnected;

        /// <summary>A callback or event handler threw. Without a handler, Update() rethrows the
        /// first such exception after it has delivered everything else.</summary>
        public event Action<Exception> CallbackFailed;

        // --- the game thread -------------------------------------------------------------------

        /// <summary>Delivers everything that arrived: replies, events, callbacks, Task
        /// completions, on this thread. Returns how many items it handled.</summary>
        public int Update()
        {
            int handled = 0;
            while (inbox.TryTake(out object item))
            {
                handled++;
                if (item is Dictionary<string, object> frame) Handle(frame);
                else if (item is Action action) action();
                else if (item is Inbox.Ended end) Lost(end.Why);
            }
            deadlines.Expire(clock());
            var failure = callbackFailure;
            callbackFailure = null;
            failure?.Throw();
            return handled;
        }

        /// <summary>The same as <see cref="Update"/>.</summary>
        public int DispatchPending() => Update();

        internal void Guard<T>(Action<T> callback, T argument)
        {
            try
            {
                callback(argument);
            }
            catch (Exception e)
            {
                var handler = CallbackFailed;
                if (handler != null) handler(e);
                else if (callbackFailure == null) callbackFailure = ExceptionDispatchInfo.Capture(e);
            }
        }

        internal void Raise(Action raise)
        {
            try
            {
                raise();
            }
            catch (Exception e)
            {
                var handler = CallbackFailed;
                if (handler != null) handler(e);
                else if (callbackFailure == null) callbackFailure = ExceptionDispatchInfo.Capture(e);
            }
        }

        internal void Post(Action action) => inbox.Add(action);

        // Gives the call its deadline when a limit is set (any thread).
        internal void Arm(IExpiring waiter, string operation)
        {
            int limit = RequestTimeoutMs;
            if (limit > 0) deadlines.Arm(waiter, operation, limit, clock());
        }

        internal void RaisePaused(long agentId, PauseInfo pause)
        {
            var handler = Paused;
            if (handler != null) Raise(() => handler(agentId, pause.NodeName, pause.PendingExit));
        }

        // --- connecting --------------------------------------------------------------------------

        /// <summary>Connects and configures the session (the TCP and TLS work runs on a worker
        /// thread). Fails with ConnectionFailedException, UnauthorizedException,
        /// ProtocolVersionMismatchException or the server's refusal (2001, 2003).</summary>
        public Task ConnectAsync()
        {
            var waiter = Waiter<Unit>.ForTask(this, out Task<Unit> task);
            StartConnect(waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ConnectAsync"/>.</summary>
        public void Connect(Action<Result> done) => StartConnect(Waiter<Unit>.ForCallback(this, Forms.Plain(done)));

        void StartConnect(Waiter<Unit> waiter)
        {
            lock (gate)
            {
                if (connection != null && !ended)
                {
                    Post(() => waiter.Fail(new ConnectionFailedException("this client is connected already; make another")));
                    return;
                }
            }
            ThreadPool.QueueUserWorkItem(_ =>
            {
                FrameConnection opened = null;
                try
                {
                    opened = FrameConnection.Open(options.Host, options.Port, options.Tls, codec, options.ConnectTimeoutMs);
                    long session = Handshake(opened);
                    lock (gate)
                    {
                        connection = opened;
                        refusal = null;
                        closing = ended = false;
                    }
                    opened.StartReader(inbox.Add, why => Ended(why));
                    inbox.Add((Action)(() =>
                    {
                        SessionId = session;
                        waiter.Set(Unit.Value);
                    }));
                }
                catch (Exception e)
                {
                    opened?.Dispose();
                    var error = e as TurnloomException ?? new ConnectionFailedException(
                        options.Host + ":" + options.Port + ": " + e.Message);
                    if (error is ConnectionDroppedException) error = new ConnectionFailedException(error.Reason);
                    inbox.Add((Action)(() => waiter.Fail(error)));
                }
            });
        }

        // SessionReady, then ConfigureSession and its Ack, read on this worker thread before the
        // reader starts (no agent exists yet, so nothing else can arrive).
        long Handshake(FrameConnection opened)
        {
            string where = options.Host + ":" + options.Port;
            Dictionary<string, object> ready;
            try
            {
                ready = opened.ReadFrame();
            }
            catch (System.IO.IOException e)
            {
                throw new ConnectionFailedException(where + " did not open a session: " + e.Message);
            }
            if (Wire.Str(ready, "type") == "ErrorResponse") throw ErrorOf(ready);
            if (Wire.Str(ready, "type") != "SessionReady")
                throw new ConnectionFailedException(where + " sent " + Wire.Str(ready, "type") + " before SessionReady");
            long max = Wire.Long(ready, "max_frame_bytes");
            if (max > 0 && max <= int.MaxValue) opened.MaxFrameBytes = (int)max;
            var hello = new Dictionary<string, object>
            {
                ["type"] = "ConfigureSession", ["request_id"] = 0L, ["protocol_version"] = (long)ProtocolVersion,
                ["client_name"] = options.ClientName,
            };
            if (!string.IsNullOrEmpty(options.AuthKey)) hello["auth_key"] = options.AuthKey;
            opened.Write(hello);
            Dictionary<string, object> reply;
            try
            {
                reply = opened.ReadFrame();
            }
            catch (System.IO.IOException e)
            {
                throw new ConnectionFailedException(where + " closed the connection during the handshake: " + e.Message);
            }
            if (Wire.Str(reply, "type") == "ErrorResponse") throw ErrorOf(reply);
            return Wire.Long(reply, "session_id");
        }

        internal static TurnloomException ErrorOf(Dictionary<string, object> frame) =>
            TurnloomException.Of((ErrorCode)Wire.Long(frame, "code"), Wire.Str(frame, "message"));

        // --- requests ------------------------------------------------------------------------------

        /// <summary>Sends <paramref name="message"/> with a fresh request_id; <paramref name="done"/>
        /// gets the reply or the error, always inside Update() (also when nothing could be sent).</summary>
        internal void Send(Dictionary<string, object> message, Action<Dictionary<string, object>, TurnloomException> done)
        {
            FrameConnection conn;
            long id;
            lock (gate)
            {
                if (refusal != null)
                {
                    var refused = refusal;
                    Post(() => done(null, refused));
                    return;
                }
                id = ++nextId;
                pending[id] = done;
                conn = connection;
            }
            message["request_id"] = id;
            try
            {
                conn.Write(message);
            }
            catch (Exception e) when (e is FrameTooLargeException || e is MsgPackException || e is System.IO.IOException)
            {
                lock (gate) pending.Remove(id);
                TurnloomException error = e as FrameTooLargeException
                    ?? (e is MsgPackException ? (TurnloomException)new MalformedMessageException(e.Message)
                        : new ConnectionDroppedException(e.Message));
                Post(() => done(null, error));
            }
        }

        /// <summary>Sends a raw request (a map with its "type"; request_id is added) and gives its
        /// reply frame, or throws the ErrorResponse as a TurnloomException.</summary>
        public Task<Dictionary<string, object>> RequestAsync(Dictionary<string, object> message)
        {
            var waiter = Waiter<Dictionary<string, object>>.ForTask(this, out var task);
            Arm(waiter, Wire.Str(message, "type"));
            Send(message, (reply, error) => { if (error != null) waiter.Fail(error); else waiter.Set(reply); });
            return task;
        }

        internal void Call<T>(string operation, Dictionary<string, object> message, Waiter<T> waiter, Func<Dictionary<string, object>, T> read)
        {
            Arm(waiter, operation);
            Send(message, (reply, error) =>
            {
                if (error != null) waiter.Fail(error);
                else waiter.Set(read(reply));
            });
        }

        /// <summary>The models the server offers.</summary>
        public Task<List<ModelInfo>> ListModelsAsync()
        {
            var waiter = Waiter<List<ModelInfo>>.ForTask(this, out var task);
            ListModels(waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ListModelsAsync"/>.</summary>
        public void ListModels(Action<Result<List<ModelInfo>>> done) => ListModels(Waiter<List<ModelInfo>>.ForCallback(this, done));

        void ListModels(Waiter<List<ModelInfo>> waiter) =>
            Call("list_models", new Dictionary<string, object> { ["type"] = "ListModels" }, waiter, reply =>
            {
                var models = new List<ModelInfo>();
                foreach (var item in Wire.List(reply, "models"))
                    if (item is Dictionary<string, object> m) models.Add(ModelInfo.FromWire(m));
                return models;
            });

        /// <summary>Creates an agent running <paramref name="graph"/>.</summary>
        public Task<TurnloomAgent> CreateAgentAsync(GraphDescription graph, AgentOptions agentOptions = null)
        {
            var waiter = Waiter<TurnloomAgent>.ForTask(this, out var task);
            CreateAgent(graph, agentOptions, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="CreateAgentAsync"/>.</summary>
        public void CreateAgent(GraphDescription graph, AgentOptions agentOptions, Action<Result<TurnloomAgent>> done) =>
            CreateAgent(graph, agentOptions, Waiter<TurnloomAgent>.ForCallback(this, done));

        void CreateAgent(GraphDescription graph, AgentOptions agentOptions, Waiter<TurnloomAgent> waiter)
        {
            var message = new Dictionary<string, object> { ["type"] = "CreateAgent", ["graph"] = graph.ToWire() };
            if (agentOptions != null)
            {
                if (agentOptions.EnableDiagnostics) message["enable_diagnostics"] = true;
                if (agentOptions.MaxStepsPerTurn > 0) message["max_steps_per_turn"] = (long)agentOptions.MaxStepsPerTurn;
                if (agentOptions.Durable) message["durable"] = true;
                // Only when set: a server older than input policies never sees the key.
                if (agentOptions.InputPolicy != InputPolicy.Reject)
                    message["input_policy"] = MessageEvent.WireName(agentOptions.InputPolicy);
            }
            var policy = agentOptions?.InputPolicy ?? InputPolicy.Reject;
            Call("create_agent", message, waiter, reply =>
            {
                var agent = new TurnloomAgent(this, Wire.Long(reply, "agent_id"), Wire.Get(reply, "resume_token") as string, policy);
                agents[agent.Id] = agent;
                return agent;
            });
        }

        /// <summary>Takes over a durable agent with its resume token (from this or an earlier
        /// session); its State says where it stands.</summary>
        public Task<TurnloomAgent> AttachAgentAsync(long agentId, string resumeToken)
        {
            var waiter = Waiter<TurnloomAgent>.ForTask(this, out var task);
            AttachAgent(agentId, resumeToken, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="AttachAgentAsync"/>.</summary>
        public void AttachAgent(long agentId, string resumeToken, Action<Result<TurnloomAgent>> done) =>
            AttachAgent(agentId, resumeToken, Waiter<TurnloomAgent>.ForCallback(this, done));

        void AttachAgent(long agentId, string resumeToken, Waiter<TurnloomAgent> waiter)
        {
            var message = new Dictionary<string, object>
            {
                ["type"] = "AttachAgent", ["agent_id"] = agentId, ["resume_token"] = resumeToken,
            };
            Call("attach_agent", message, waiter, reply =>
            {
                if (!agents.TryGetValue(agentId, out var agent))
                {
                    agent = new TurnloomAgent(this, agentId, resumeToken);
                    agents[agentId] = agent;
                }
                agent.Attached(AgentState.FromWire(reply), MessageEvent.PolicyNamed(Wire.Str(reply, "input_policy")));
                return agent;
            });
        }

        internal void Forget(long agentId) => agents.Remove(agentId);

        // --- save slots ------------------------------------------------------------------------------
        // Kept in the server's store (serve --store PATH; without one, InvalidParamValueException)
        // and shared by all its sessions (docs/reference/durability.md, "Save slots"). Loaded and
        // forked agents belong to this session and keep the saved input policy; they stand where
        // the save was: WaitAsync gives their step (a pause keeps the time it had left).

        /// <summary>A new agent of this session from the save slot <paramref name="slot"/>
        /// (InvalidParamValueException if there is no such slot). With
        /// <paramref name="replaceAgentId"/>, this session's agent of that id is destroyed (its
        /// open turn ends cancelled, with its callbacks) and the slot's agent takes its place and
        /// its id; the old TurnloomAgent is then IsDestroyed.</summary>
        public Task<TurnloomAgent> LoadAsync(string slot, long? replaceAgentId = null)
        {
            var waiter = Waiter<TurnloomAgent>.ForTask(this, out var task);
            Load(slot, replaceAgentId, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="LoadAsync"/>.</summary>
        public void Load(string slot, long? replaceAgentId, Action<Result<TurnloomAgent>> done) =>
            Load(slot, replaceAgentId, Waiter<TurnloomAgent>.ForCallback(this, done));

        void Load(string slot, long? replaceAgentId, Waiter<TurnloomAgent> waiter)
        {
            var message = new Dictionary<string, object>
            {
                ["type"] = "LoadSlot", ["slot"] = slot, ["replace_agent_id"] = replaceAgentId,
            };
            Call("load", message, waiter, reply => Adopt(reply, slot));
        }

        /// <summary>A new agent of this session that goes on independently from
        /// <paramref name="source"/>, one of its agents at rest (idle or paused; AgentBusyException
        /// while its turn runs).</summary>
        public Task<TurnloomAgent> ForkAsync(TurnloomAgent source)
        {
            var waiter = Waiter<TurnloomAgent>.ForTask(this, out var task);
            Fork(ForkOf("agent_id", source.Id), waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ForkAsync(TurnloomAgent)"/>.</summary>
        public void Fork(TurnloomAgent source, Action<Result<TurnloomAgent>> done) =>
            Fork(ForkOf("agent_id", source.Id), Waiter<TurnloomAgent>.ForCallback(this, done));

        /// <summary>A new agent of this session from the save slot <paramref name="slot"/>.</summary>
        public Task<TurnloomAgent> ForkAsync(string slot)
        {
            var waiter = Waiter<TurnloomAgent>.ForTask(this, out var task);
            Fork(ForkOf("slot", slot), waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ForkAsync(string)"/>.</summary>
        public void Fork(string slot, Action<Result<TurnloomAgent>> done) =>
            Fork(ForkOf("slot", slot), Waiter<TurnloomAgent>.ForCallback(this, done));

        static Dictionary<string, object> ForkOf(string key, object source) =>
            new Dictionary<string, object> { ["type"] = "ForkAgent", [key] = source };

        void Fork(Dictionary<string, object> message, Waiter<TurnloomAgent> waiter) =>
            Call("fork", message, waiter, reply => Adopt(reply, ""));

        // The agent a LoadSlot or ForkAgent made, taken into the session while its reply is
        // handled (before any later frame: its events find it). A LoadSlot in place of an agent
        // reuses its id: the old face's agent is gone.
        TurnloomAgent Adopt(Dictionary<string, object> reply, string slot)
        {
            var agent = new TurnloomAgent(this, Wire.Long(reply, "agent_id"), null,
                MessageEvent.PolicyNamed(Wire.Str(reply, "input_policy")));
            if (agents.TryGetValue(agent.Id, out var old)) old.Replaced(slot);
            agents[agent.Id] = agent;
            return agent;
        }

        /// <summary>The save slots (of one saved agent, or all), newest first.</summary>
        public Task<List<SlotInfo>> ListSlotsAsync(long? agentId = null)
        {
            var waiter = Waiter<List<SlotInfo>>.ForTask(this, out var task);
            ListSlots(agentId, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ListSlotsAsync"/>.</summary>
        public void ListSlots(long? agentId, Action<Result<List<SlotInfo>>> done) =>
            ListSlots(agentId, Waiter<List<SlotInfo>>.ForCallback(this, done));

        void ListSlots(long? agentId, Waiter<List<SlotInfo>> waiter)
        {
            var message = new Dictionary<string, object> { ["type"] = "ListSlots", ["agent_id"] = agentId };
            Call("list_slots", message, waiter, reply =>
            {
                var slots = new List<SlotInfo>();
                foreach (var item in Wire.List(reply, "slots"))
                    if (item is Dictionary<string, object> m) slots.Add(SlotInfo.FromWire(m));
                return slots;
            });
        }

        /// <summary>Removes a save slot; false when there was none.</summary>
        public Task<bool> DeleteSlotAsync(string slot)
        {
            var waiter = Waiter<bool>.ForTask(this, out var task);
            DeleteSlot(slot, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="DeleteSlotAsync"/>.</summary>
        public void DeleteSlot(string slot, Action<Result<bool>> done) => DeleteSlot(slot, Waiter<bool>.ForCallback(this, done));

        void DeleteSlot(string slot, Waiter<bool> waiter) =>
            Call("delete_slot", new Dictionary<string, object> { ["type"] = "DeleteSlot", ["slot"] = slot }, waiter,
                reply => Wire.Bool(reply, "deleted"));

        // --- frames, on the game thread ------------------------------------------------------------

        void Handle(Dictionary<string, object> frame)
        {
            string type = Wire.Str(frame, "type");
            if (Wire.Get(frame, "request_id") is long id)
            {
                Action<Dictionary<string, object>, TurnloomException> done;
                lock (gate)
                {
                    if (!pending.TryGetValue(id, out done)) return;
                    pending.Remove(id);
                }
                if (type == "ErrorResponse") done(null, ErrorOf(frame));
                else done(frame, null);
                return;
            }
            if (type == "ErrorResponse")
            {
                Notice(frame);
                return;
            }
            // Events: AnswerText, NodeEvent, TurnComplete, AgentDetached (others: a newer server's).
            if (Wire.Get(frame, "agent_id") is long agentId && agents.TryGetValue(agentId, out var agent))
                agent.OnEvent(type, frame);
        }

        // An ErrorResponse answering no request: an event that could not be sent (with agent_id),
        // the shutdown notice (2001), or a session closed for a limit.
        void Notice(Dictionary<string, object> frame)
        {
            var error = ErrorOf(frame);
            if (Wire.Get(frame, "agent_id") is long agentId && agents.TryGetValue(agentId, out var agent))
            {
                agent.Fail(error, false);
                return;
            }
            if (error.Code == ErrorCode.ServerShuttingDown || error.Code == ErrorCode.SessionLimitExceeded)
                lock (gate) refusal = refusal ?? error;
        }

        // The reader thread: the connection ended. Later requests are refused at once; the
        // pending ones are failed when Update() reaches this point of the stream.
        void Ended(string why)
        {
            lock (gate)
            {
                // After a shutdown notice (2001) or a limit's closing (2003), calls keep that reason.
                if (refusal == null) refusal = new ConnectionDroppedException("connection lost: " + why);
            }
            inbox.Add(new Inbox.Ended(why));
        }

        void Lost(string why)
        {
            List<Action<Dictionary<string, object>, TurnloomException>> failed;
            TurnloomException error;
            bool expected;
            lock (gate)
            {
                failed = new List<Action<Dictionary<string, object>, TurnloomException>>(pending.Values);
                pending.Clear();
                expected = closing;
                ended = true;
                error = expected ? new ConnectionDroppedException("the client disconnected") : new ConnectionDroppedException("connection lost: " + why);
                refusal = expected || refusal is ConnectionDroppedException ? error : refusal;
                connection?.Dispose();
            }
            foreach (var done in failed) done(null, error);
            foreach (var agent in new List<TurnloomAgent>(agents.Values)) agent.Fail(error, !expected);
            agents.Clear();
            if (expected)
            {
                var waiter = disconnected;
                disconnected = null;
                waiter?.Set(Unit.Value);
                return;
            }
            var handler = Disconnected;
            if (handler != null) Raise(() => handler(error));
        }

        // --- disconnecting ---------------------------------------------------------------------------

        /// <summary>Destroys this session's agents (their open turns end cancelled, with their
        /// callbacks; durable agents are kept by the server), then half-closes and completes
        /// once the server has released the session.</summary>
        public Task DisconnectAsync()
        {
            var waiter = Waiter<Unit>.ForTask(this, out Task<Unit> task);
            Disconnect(waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="DisconnectAsync"/>.</summary>
        public void Disconnect(Action<Result> done) => Disconnect(Waiter<Unit>.ForCallback(this, Forms.Plain(done)));

        void Disconnect(Waiter<Unit> waiter)
        {
            Post(() =>
            {
                bool open;
                lock (gate) open = connection != null && !ended && (refusal == null || refusal is ServerShuttingDownException);
                if (!open)
                {
                    waiter.Set(Unit.Value);
                    return;
                }
                var destroying = new List<TurnloomAgent>();
                foreach (var agent in agents.Values)
                    if (!agent.IsDurable) destroying.Add(agent);
                int left = destroying.Count;
                Action halfClose = () =>
                {
                    FrameConnection conn;
                    lock (gate)
                    {
                        closing = true;
                        refusal = new ConnectionDroppedException("the client disconnected");
                        conn = connection;
                    }
                    disconnected = waiter;
                    conn.ShutdownSend();
                };
                if (left == 0)
                {
                    halfClose();
                    return;
                }
                foreach (var agent in destroying)
                    agent.Destroy(_ => { if (--left == 0) halfClose(); });
            });
        }

        /// <summary>Closes the connection at once (no agent is destroyed first: the server cancels
        /// their turns without telling). Pending calls fail with 1002 on the next Update().</summary>
        public void Dispose()
        {
            FrameConnection conn;
            lock (gate)
            {
                closing = true;
                refusal = new ConnectionDroppedException("the client was disposed");
                conn = connection;
            }
            conn?.Dispose();
        }
    }
}
