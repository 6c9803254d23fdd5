// One agent of a session: its requests (each in an async Task form and a callback form), its
// events, registered tools and kept tool batches (docs/protocol.md sections 3, 4.2 and 5).
// Its state is touched only inside Update(), on the game thread.
using System;
using System.Collections.Generic;
using System.Threading.Tasks;

namespace Turnloom
{
    /// <summary>Answers one tool call on the game thread: the returned text is the result the
    /// model sees (ignored for Pause / PauseAndAcknowledge dispositions).</summary>
    public delegate string ToolHandler(ToolCall call);

    /// <summary>An agent on the server. SendMessage and the resumes answer with a
    /// <see cref="Step"/>: the turn's next pause or its completion.</summary>
    public sealed class TurnloomAgent
    {
        readonly TurnloomClient client;
        readonly List<Waiter<Step>> steps = new List<Waiter<Step>>();
        // Callers of queued messages (Enqueue), oldest first, in the server's queue order: each
        // joins `steps` when the server says its turn started. A caller that timed out keeps its
        // place, so the order stays the server's.
        readonly List<Waiter<Step>> queued = new List<Waiter<Step>>();
        readonly List<Waiter<TurnResult>> completions = new List<Waiter<TurnResult>>();
        readonly Dictionary<string, ToolHandler> tools = new Dictionary<string, ToolHandler>();
        List<ToolResult> keptBatch;
        long pauseSerial, batchSerial;
        bool destroyed;
        // The save slot whose agent took this one's place (LoadSlot), or null.
        string replacedBy;

        internal TurnloomAgent(TurnloomClient client, long id, string resumeToken, InputPolicy inputPolicy = InputPolicy.Reject)
        {
            this.client = client;
            Id = id;
            ResumeToken = resumeToken;
            InputPolicy = inputPolicy;
        }

        /// <summary>The server's id of the agent.</summary>
        public long Id { get; }

        /// <summary>A durable agent's resume token (keep it like a password), else null.</summary>
        public string ResumeToken { get; }

        /// <summary>A durable agent (it has a resume token).</summary>
        public bool IsDurable => ResumeToken != null;

        /// <summary>The client it belongs to.</summary>
        public TurnloomClient Client => client;

        /// <summary>The pause the turn stands at, or null.</summary>
        public PauseInfo CurrentPause { get; private set; }

        /// <summary>The completion of the last finished turn, or null.</summary>
        public TurnResult LastResult { get; private set; }

        /// <summary>Where the agent stood when it was attached (AttachAgent), else null.</summary>
        public AgentState AttachedState { get; private set; }

        /// <summary>What a message does while a turn is open, as this client last set it
        /// (CreateAgent, SetInputPolicy) or heard it (a loaded, forked or attached agent's own).</summary>
        public InputPolicy InputPolicy { get; private set; }

        /// <summary>Destroyed (DestroyAsync), or replaced by a LoadSlot in its place: every call
        /// fails with AgentAlreadyDestroyedException.</summary>
        public bool IsDestroyed => destroyed;

        /// <summary>A refused registered-tool batch is kept for <see cref="RetryPausedToolBatchAsync"/>.</summary>
        public bool HasPausedToolBatch => keptBatch != null;

        /// <summary>The turn paused.</summary>
        public event Action<PauseInfo> Paused;
        /// <summary>A paused turn went on: (nodeName, resumeNode; "" for a plain resume).</summary>
        public event Action<string, string> Resumed;
        /// <summary>Reply text: (text, isDelta, isFinal); exactly one final chunk per turn.</summary>
        public event Action<string, bool, bool> AnswerText;
        /// <summary>A ToolCall node with a notifying disposition detected a call.</summary>
        public event Action<ToolCall> ToolCall;
        /// <summary>A turn ended.</summary>
        public event Action<TurnResult> TurnComplete;
        /// <summary>A message's fate was decided: started, queued, interrupted, merged or
        /// dropped (only for agents whose input policy is not Reject).</summary>
        public event Action<MessageEvent> Message;
        /// <summary>The agent is gone from this session: the connection was lost (1002) or
        /// another session attached it (3001).</summary>
        public event Action<TurnloomException> Disconnected;

        // --- events (game thread) ------------------------------------------------------------------

        internal void OnEvent(string type, Dictionary<string, object> frame)
        {
            switch (type)
            {
                case "AnswerText":
                    {
                        var handler = AnswerText;
                        if (handler != null)
                        {
                            string text = Wire.Str(frame, "text");
                            bool delta = Wire.Bool(frame, "is_delta"), final = Wire.Bool(frame, "is_final");
                            client.Raise(() => handler(text, delta, final));
                        }
                        break;
                    }
                case "TurnComplete":
                    Completed(TurnResult.FromWire(frame));
                    break;
                case "NodeEvent":
                    switch (Wire.Str(frame, "event"))
                    {
                        case "paused":
                            OnPaused(PauseInfo.FromWire(frame));
                            break;
                        case "resumed":
                            {
                                CurrentPause = null;
                                var handler = Resumed;
                                string node = Wire.Str(frame, "node_name"), to = Wire.Str(frame, "resume_node");
                                if (handler != null) client.Raise(() => handler(node, to));
                                break;
                            }
                        case "message":
                            OnMessage(MessageEvent.FromWire(frame));
                            break;
                        case "tool_call":
                            {
                                var handler = ToolCall;
                                var call = Turnloom.ToolCall.FromWire(frame);
                                if (handler != null) client.Raise(() => handler(call));
                                break;
                            }
                    }
                    break;
                case "AgentDetached":
                    Fail(new InvalidAgentIdException("agent " + Id + " was attached by another session (" +
                        Wire.Str(frame, "reason") + ")"), true);
                    client.Forget(Id);
                    break;
            }
        }

        void OnMessage(MessageEvent message)
        {
            // While messages wait, every turn that starts plainly is the oldest one's (the agent
            // is busy until its queue is empty; interrupt and merge report their own fates).
            if (message.Fate == MessageFate.Started && queued.Count > 0)
            {
                steps.Add(queued[0]);
                queued.RemoveAt(0);
            }
            else if (message.Fate == MessageFate.Dropped && queued.Count > 0)
            {
                var waiter = queued[0];
                queued.RemoveAt(0);
                waiter.Fail(new AgentAlreadyDestroyedException("agent " + Id + " was destroyed while the message waited in its queue"));
            }
            var handler = Message;
            if (handler != null) client.Raise(() => handler(message));
        }

        void OnPaused(PauseInfo info)
        {
            keptBatch = null;
            CurrentPause = info;
            long serial = ++pauseSerial;
            var handler = Paused;
            if (handler != null) client.Raise(() => handler(info));
            client.RaisePaused(Id, info);

            // Registered tools answer a batch only when they cover all of it.
            var handlers = new List<ToolHandler>();
            foreach (var call in info.PendingCalls)
            {
                if (!tools.TryGetValue(call.ToolName, out var tool)) { handlers.Clear(); break; }
                handlers.Add(tool);
            }
            if (handlers.Count == 0)
            {
                Settle(new Step { Pause = info });
                return;
            }
            var batch = new List<ToolResult>();
            for (int k = 0; k < handlers.Count; k++)
            {
                string output = null;
                var call = info.PendingCalls[k];
                client.Raise(() => output = handlers[k](call));
                // Pause / PauseAndAcknowledge: the handlers ran for their side effects; results
                // would be refused (3016).
                if (info.AwaitsResults) batch.Add(new ToolResult(call.CallId, output ?? ""));
            }
            keptBatch = batch;
            long sent = ++batchSerial;
            // A waiting caller waits on through this resume, unless the server refuses it: then
            // the batch is kept and the caller gets the pause.
            client.Send(ResumeMessage("", batch), (reply, error) =>
            {
                if (error == null)
                {
                    if (batchSerial == sent) keptBatch = null;
                    return;
                }
                if (CurrentPause != null && pauseSerial == serial) Settle(new Step { Pause = info });
            });
        }

        void Completed(TurnResult result)
        {
            CurrentPause = null;
            keptBatch = null;
            LastResult = result;
            var handler = TurnComplete;
            if (handler != null) client.Raise(() => handler(result));
            Settle(new Step { Result = result });
            var waiting = completions.ToArray();
            completions.Clear();
            foreach (var waiter in waiting) waiter.Set(result);
        }

        void Settle(Step step)
        {
            if (steps.Count == 0) return;
            var waiting = steps.ToArray();
            steps.Clear();
            foreach (var waiter in waiting) waiter.Set(step);
        }

        internal void Fail(TurnloomException error, bool raise)
        {
            var waitingSteps = new List<Waiter<Step>>(steps);
            waitingSteps.AddRange(queued);
            var waitingEnds = completions.ToArray();
            steps.Clear();
            queued.Clear();
            completions.Clear();
            foreach (var waiter in waitingSteps) waiter.Fail(error);
            foreach (var waiter in waitingEnds) waiter.Fail(error);
            var handler = Disconnected;
            if (raise && handler != null) client.Raise(() => handler(error));
        }

        // A LoadSlot put another agent in this one's place (same id): the server destroyed this
        // one (its open turn's cancelled end came before the reply), so what still waits would
        // wait forever.
        internal void Replaced(string slot)
        {
            destroyed = true;
            replacedBy = slot;
            var waitingSteps = new List<Waiter<Step>>(steps);
            waitingSteps.AddRange(queued);
            var waitingEnds = completions.ToArray();
            steps.Clear();
            queued.Clear();
            completions.Clear();
            var error = new AgentAlreadyDestroyedException("agent " + Id + " was replaced by save slot '" + slot + "'");
            foreach (var waiter in waitingSteps) waiter.Fail(error);
            foreach (var waiter in waitingEnds) waiter.Fail(error);
        }

        internal void Attached(AgentState state, InputPolicy inputPolicy)
        {
            AttachedState = state;
            InputPolicy = inputPolicy;
            CurrentPause = state.Pause;
            if (state.LastResult != null) LastResult = state.LastResult;
        }

        // --- plumbing ---------------------------------------------------------------------------

        bool Refused<T>(Waiter<T> waiter, string operation)
        {
            if (!destroyed) return false;
            var error = new AgentAlreadyDestroyedException("agent " + Id + " was destroyed; " + operation + " refused");
            client.Post(() => waiter.Fail(error));
            return true;
        }

        Dictionary<string, object> Frame(string type) =>
            new Dictionary<string, object> { ["type"] = type, ["agent_id"] = Id };

        Dictionary<string, object> ResumeMessage(string resumeNode, IList<ToolResult> results)
        {
            var items = new List<object>(results?.Count ?? 0);
            if (results != null)
                foreach (var r in results)
                    items.Add(new Dictionary<string, object> { ["call_id"] = r.CallId, ["result"] = r.Result });
            var message = Frame("ResumeAgent");
            message["resume_node"] = resumeNode ?? "";
            message["tool_results"] = items;
            return message;
        }

        // A request answered by its step: the waiter is registered while the Ack is handled,
        // before any later frame is looked at (docs/protocol.md section 5). A queued message's
        // Ack (Enqueue) puts it in line instead: its step comes after its "started" event.
        void StepRequest(string operation, Dictionary<string, object> message, Waiter<Step> waiter, Action onAccepted = null)
        {
            if (Refused(waiter, operation)) return;
            client.Arm(waiter, operation);
            client.Send(message, (reply, error) =>
            {
                if (error != null)
                {
                    waiter.Fail(error);
                    return;
                }
                onAccepted?.Invoke();
                if (replacedBy != null)
                {
                    // A LoadSlot in this agent's place was answered first: the request went to
                    // the slot's agent, whose face gets the step; this one would wait forever.
                    waiter.Fail(new AgentAlreadyDestroyedException("agent " + Id + " was replaced by save slot '" + replacedBy
                        + "' before its " + operation + " was answered; the agent in its place took it (wait on the agent LoadAsync gave)"));
                    return;
                }
                (Wire.Bool(reply, "queued") ? queued : steps).Add(waiter);
            });
        }

        void Call<T>(string operation, Dictionary<string, object> message, Waiter<T> waiter, Func<Dictionary<string, object>, T> read)
        {
            if (Refused(waiter, operation)) return;
            client.Call(operation, message, waiter, read);
        }

        static Waiter<T> NewTask<T>(TurnloomClient client, out Task<T> task) => Waiter<T>.ForTask(client, out task);

        // --- turns --------------------------------------------------------------------------------

        /// <summary>Starts a turn with the player's <paramref name="text"/>; answers at its first
        /// pause or its completion. While a turn is open: AgentBusyException under the Reject
        /// policy; under Enqueue it answers at the first pause or completion of the message's own
        /// turn (after the open one ends).</summary>
        public Task<Step> SendMessageAsync(string text)
        {
            var waiter = NewTask(client, out Task<Step> task);
            SendMessage(text, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="SendMessageAsync"/>.</summary>
        public void SendMessage(string text, Action<Result<Step>> done = null) =>
            SendMessage(text, Waiter<Step>.ForCallback(client, done));

        void SendMessage(string text, Waiter<Step> waiter)
        {
            var message = Frame("SendMessage");
            message["text"] = text;
            StepRequest("send_message", message, waiter);
        }

        /// <summary>Resumes the pause through its pending exit ("" ) or jumps to
        /// <paramref name="resumeNode"/>; answers at the next pause or the completion.</summary>
        public Task<Step> ResumeAsync(string resumeNode = "")
        {
            var waiter = NewTask(client, out Task<Step> task);
            StepRequest("resume", ResumeMessage(resumeNode, null), waiter);
            return task;
        }

        /// <summary>The callback form of a plain <see cref="ResumeAsync"/>.</summary>
        public void Resume(Action<Result<Step>> done = null) => Resume("", done);

        /// <summary>The callback form of a jump <see cref="ResumeAsync"/>.</summary>
        public void Resume(string resumeNode, Action<Result<Step>> done = null) =>
            StepRequest("resume", ResumeMessage(resumeNode, null), Waiter<Step>.ForCallback(client, done));

        /// <summary>Resumes an AwaitResult pause with one result per pending call.</summary>
        public Task<Step> ResumeWithToolResultsAsync(IList<ToolResult> results)
        {
            var waiter = NewTask(client, out Task<Step> task);
            StepRequest("resume", ResumeMessage("", results), waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ResumeWithToolResultsAsync"/>.</summary>
        public void ResumeWithToolResults(IList<ToolResult> results, Action<Result<Step>> done = null) =>
            StepRequest("resume", ResumeMessage("", results), Waiter<Step>.ForCallback(client, done));

        /// <summary>Resumes an AwaitResult pause of one call.</summary>
        public Task<Step> ResumeWithToolResultAsync(ToolResult result) => ResumeWithToolResultsAsync(new[] { result });

        /// <summary>The callback form of <see cref="ResumeWithToolResultAsync"/>.</summary>
        public void ResumeWithToolResult(ToolResult result, Action<Result<Step>> done = null) =>
            ResumeWithToolResults(new[] { result }, done);

        /// <summary>Registers (or, with null, removes) the game's handler of a tool: when a
        /// pausing ToolCall pauses and every pending call has a handler, they run on the game
        /// thread and the turn is resumed with their results; a caller waiting on the step
        /// waits on through that resume.</summary>
        public void RegisterTool(string toolName, ToolHandler handler)
        {
            if (handler == null) tools.Remove(toolName);
            else tools[toolName] = handler;
        }

        /// <summary>Sends the kept batch again (after the server refused the automatic resume).
        /// NoPausedToolBatchException when none is kept.</summary>
        public Task<Step> RetryPausedToolBatchAsync()
        {
            var waiter = NewTask(client, out Task<Step> task);
            RetryPausedToolBatch(waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="RetryPausedToolBatchAsync"/>.</summary>
        public void RetryPausedToolBatch(Action<Result<Step>> done = null) =>
            RetryPausedToolBatch(Waiter<Step>.ForCallback(client, done));

        void RetryPausedToolBatch(Waiter<Step> waiter)
        {
            if (keptBatch == null)
            {
                var error = new NoPausedToolBatchException("agent " + Id + ": no paused tool batch is kept; nothing to retry");
                client.Post(() => waiter.Fail(error));
                return;
            }
            long serial = batchSerial;
            StepRequest("retry_paused_tool_batch", ResumeMessage("", keptBatch), waiter, () =>
            {
                if (batchSerial == serial) keptBatch = null;
            });
        }

        /// <summary>The step the agent stands at now: its pause, its last completion when idle,
        /// or (while running) the next pause or completion.</summary>
        public Task<Step> WaitAsync()
        {
            var waiter = NewTask(client, out Task<Step> task);
            if (Refused(waiter, "wait")) return task;
            client.Arm(waiter, "wait");
            client.Send(Frame("GetAgentState"), (reply, error) =>
            {
                if (error != null) { waiter.Fail(error); return; }
                var state = AgentState.FromWire(reply);
                if (state.State == "idle") waiter.Set(new Step { Result = state.LastResult });
                else if (state.State == "paused" && state.Pause != null) waiter.Set(new Step { Pause = state.Pause });
                else steps.Add(waiter);
            });
            return task;
        }

        /// <summary>The end of the open turn (at once when idle: the last result, or null).</summary>
        public Task<TurnResult> WaitCompleteAsync()
        {
            var waiter = NewTask(client, out Task<TurnResult> task);
            if (Refused(waiter, "wait_complete")) return task;
            client.Arm(waiter, "wait_complete");
            client.Send(Frame("GetAgentState"), (reply, error) =>
            {
                if (error != null) { waiter.Fail(error); return; }
                var state = AgentState.FromWire(reply);
                if (state.State == "idle") waiter.Set(state.LastResult);
                else completions.Add(waiter);
            });
            return task;
        }

        /// <summary>The agent's state (GetAgentState).</summary>
        public Task<AgentState> GetStateAsync()
        {
            var waiter = NewTask(client, out Task<AgentState> task);
            Call("get_state", Frame("GetAgentState"), waiter, AgentState.FromWire);
            return task;
        }

        /// <summary>Changes what a message does while a turn is open (legal idle or paused;
        /// AgentBusyException while a turn runs). Messages already waiting keep their places.</summary>
        public Task SetInputPolicyAsync(InputPolicy policy)
        {
            var waiter = NewTask(client, out Task<Unit> task);
            SetInputPolicy(policy, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="SetInputPolicyAsync"/>.</summary>
        public void SetInputPolicy(InputPolicy policy, Action<Result> done = null) =>
            SetInputPolicy(policy, Waiter<Unit>.ForCallback(client, Forms.Plain(done)));

        void SetInputPolicy(InputPolicy policy, Waiter<Unit> waiter)
        {
            var message = Frame("SetInputPolicy");
            message["input_policy"] = MessageEvent.WireName(policy);
            Call("set_input_policy", message, waiter, _ =>
            {
                InputPolicy = policy;
                return Unit.Value;
            });
        }

        // --- save slots -------------------------------------------------------------------------------

        /// <summary>Writes the agent into the server store's save slot <paramref name="slot"/>,
        /// replacing what it held, at rest: idle, or paused (tool calls pending included).
        /// AgentBusyException while a turn runs; InvalidParamValueException when the server has no
        /// store (--store) or for a bad name (1 to 128 characters). TurnloomClient.LoadAsync and
        /// ForkAsync bring it back (docs/reference/durability.md, "Save slots").</summary>
        public Task<SlotInfo> SaveAsync(string slot)
        {
            var waiter = NewTask(client, out Task<SlotInfo> task);
            Save(slot, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="SaveAsync"/>.</summary>
        public void Save(string slot, Action<Result<SlotInfo>> done) => Save(slot, Waiter<SlotInfo>.ForCallback(client, done));

        void Save(string slot, Waiter<SlotInfo> waiter)
        {
            var message = Frame("SaveSlot");
            message["slot"] = slot;
            Call("save", message, waiter, SlotInfo.FromWire);
        }

        // --- params ---------------------------------------------------------------------------------

        /// <summary>Replaces a node's params whole (typically GetParams' baseline, changed):
        /// only mutable fields may differ. Allowed while idle or paused; a change made while
        /// paused is seen by the nodes that run after the resume.</summary>
        public Task ChangeParamsAsync(string nodeName, NodeParams nodeParams)
        {
            var waiter = NewTask(client, out Task<Unit> task);
            ChangeParams(nodeName, nodeParams.ToWire(), nodeParams.NodeType, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ChangeParamsAsync"/>.</summary>
        public void ChangeParams(string nodeName, NodeParams nodeParams, Action<Result> done = null) =>
            ChangeParams(nodeName, nodeParams.ToWire(), nodeParams.NodeType, Waiter<Unit>.ForCallback(client, Forms.Plain(done)));

        /// <summary>Changes only the named fields (a nested map such as sampling changes only
        /// the fields it names).</summary>
        public Task ChangeParamFieldsAsync(string nodeName, Dictionary<string, object> fields)
        {
            var waiter = NewTask(client, out Task<Unit> task);
            ChangeParams(nodeName, fields, null, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="ChangeParamFieldsAsync"/>.</summary>
        public void ChangeParamFields(string nodeName, Dictionary<string, object> fields, Action<Result> done = null) =>
            ChangeParams(nodeName, fields, null, Waiter<Unit>.ForCallback(client, Forms.Plain(done)));

        void ChangeParams(string nodeName, Dictionary<string, object> fields, string nodeType, Waiter<Unit> waiter)
        {
            var message = Frame("ChangeAgentParam");
            message["node_name"] = nodeName;
            message["params"] = fields;
            if (nodeType != null) message["node_type"] = nodeType;
            Call("change_params", message, waiter, _ => Unit.Value);
        }

        /// <summary>A node's current params, every field (the baseline to change).</summary>
        public Task<NodeParams> GetParamsAsync(string nodeName)
        {
            var waiter = NewTask(client, out Task<NodeParams> task);
            GetParams(nodeName, waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="GetParamsAsync"/>.</summary>
        public void GetParams(string nodeName, Action<Result<NodeParams>> done) =>
            GetParams(nodeName, Waiter<NodeParams>.ForCallback(client, done));

        void GetParams(string nodeName, Waiter<NodeParams> waiter)
        {
            var message = Frame("GetAgentParam");
            message["node_name"] = nodeName;
            Call("get_params", message, waiter, reply =>
                NodeParams.FromWire(Wire.Str(reply, "node_type"), Wire.Map(reply, "params")));
        }

        // --- ending ------------------------------------------------------------------------------------

        /// <summary>Ends the open turn cancelled (its final text and TurnComplete come first);
        /// false when there was no open turn.</summary>
        public Task<bool> CancelAsync()
        {
            var waiter = NewTask(client, out Task<bool> task);
            Call("cancel", Frame("Cancel"), waiter, reply => Wire.Bool(reply, "cancelled"));
            return task;
        }

        /// <summary>The callback form of <see cref="CancelAsync"/>.</summary>
        public void Cancel(Action<Result<bool>> done = null) =>
            Call("cancel", Frame("Cancel"), Waiter<bool>.ForCallback(client, done), reply => Wire.Bool(reply, "cancelled"));

        /// <summary>Cancels the open turn (with its callbacks) and destroys the agent; later
        /// calls fail with AgentAlreadyDestroyedException.</summary>
        public Task DestroyAsync()
        {
            var waiter = NewTask(client, out Task<Unit> task);
            Destroy(waiter);
            return task;
        }

        /// <summary>The callback form of <see cref="DestroyAsync"/>.</summary>
        public void Destroy(Action<Result> done = null) => Destroy(Waiter<Unit>.ForCallback(client, Forms.Plain(done)));

        void Destroy(Waiter<Unit> waiter) =>
            Call("destroy", Frame("DestroyAgent"), waiter, _ =>
            {
                destroyed = true;
                client.Forget(Id);
                return Unit.Value;
            });
    }
}
