// An NPC's agent as a component, in the shape of the original engine's Unity example:
// ChangeParams / GetNodeParamsBaseline / Resume / ResumeWithToolResult(s) / RegisterTool, with
// UnityEvents for pause, resume, text, params changed and turn complete; and save slots: Save,
// Load (the slot's agent in place of this one), Fork, ListSlots. Every event fires on the main
// thread (TurnloomClientBehaviour pumps the client in Update).
#if UNITY_5_3_OR_NEWER
using System;
using System.Collections.Generic;
using UnityEngine;
using UnityEngine.Events;

namespace Turnloom.Unity
{
    /// <summary>A UnityEvent with two strings.</summary>
    [Serializable]
    public sealed class StringPairEvent : UnityEvent<string, string> { }

    /// <summary>One agent of the scene's client. Give it a graph (Graph, before it is enabled)
    /// or use the default: Pause "listen" (when pauseBeforeAnswer) then Generate "answer".
    /// Calls made before the agent exists, or while a Load replaces it, wait for it and are
    /// made in order once it is there (if it cannot be created, onError says why).</summary>
    [AddComponentMenu("Turnloom/Turnloom Agent")]
    public sealed class TurnloomAgentComponent : MonoBehaviour
    {
        [Tooltip("The default graph's system prompt.")]
        [TextArea] public string systemPrompt = "You are a shopkeeper.";
        [Tooltip("The default graph pauses before answering, so the game can change the prompt.")]
        public bool pauseBeforeAnswer = true;
        [Tooltip("The model ('mock' for python -m turnloom serve --mock).")]
        public string modelName = "mock";
        [Tooltip("What a message does while the NPC's turn is open: refused (Reject), waits (Enqueue), or cuts the turn short (Interrupt, Merge).")]
        public InputPolicy inputPolicy = InputPolicy.Reject;

        /// <summary>(nodeName, pendingExit).</summary>
        public StringPairEvent onPaused = new StringPairEvent();
        /// <summary>(nodeName, resumeNode).</summary>
        public StringPairEvent onResumed = new StringPairEvent();
        /// <summary>Each streamed piece of the reply.</summary>
        public StringEvent onAnswerText = new StringEvent();
        /// <summary>A ChangeParams succeeded: the node's name.</summary>
        public StringEvent onParamChanged = new StringEvent();
        /// <summary>The whole reply, once per turn.</summary>
        public StringEvent onTurnComplete = new StringEvent();
        /// <summary>A call failed: the error's text.</summary>
        public StringEvent onError = new StringEvent();
        /// <summary>A Save succeeded: the slot's name.</summary>
        public StringEvent onSaved = new StringEvent();
        /// <summary>A Load put the slot's agent in place of this one: the slot's name.</summary>
        public StringEvent onLoaded = new StringEvent();

        /// <summary>The graph to create (default: see the class).</summary>
        public GraphDescription Graph;

        /// <summary>The agent, once created (after a Load: the slot's agent, under the same id).</summary>
        public TurnloomAgent Agent { get; private set; }

        readonly Dictionary<string, ToolHandler> tools = new Dictionary<string, ToolHandler>();
        // The calls made before the agent exists or while a Load replaces it (made then, they
        // would reach no agent, or the one being replaced): each is called with null once the
        // agent is there, in call order, or with the reason there is none (the creation failed).
        readonly List<Action<TurnloomException>> waiting = new List<Action<TurnloomException>>();
        bool creating;
        bool loading;

        GraphDescription DefaultGraph()
        {
            var graph = new GraphDescription();
            if (pauseBeforeAnswer) graph.AddPause("listen", new PauseParams { DefaultExit = "answer" });
            graph.AddGenerate("answer", new GenerateParams { SystemPrompt = systemPrompt });
            return graph.SetStartNode(pauseBeforeAnswer ? "listen" : "answer").SetDefaultModelName(modelName);
        }

        void Start()
        {
            var owner = TurnloomClientBehaviour.Instance;
            if (owner == null || owner.Client == null)
            {
                onError.Invoke("no TurnloomClientBehaviour in the scene");
                return;
            }
            // CreateAgent waits behind the connection's handshake on the same socket queue.
            owner.onConnected.AddListener(Create);
            if (owner.Client.IsConnected) Create();
        }

        void Create()
        {
            if (creating) return;  // connected before Start, and onConnected after it
            creating = true;
            var client = TurnloomClientBehaviour.Instance.Client;
            client.CreateAgent(Graph ?? DefaultGraph(), new AgentOptions { InputPolicy = inputPolicy }, created =>
            {
                if (!created.Ok)
                {
                    onError.Invoke(created.Error.Message);
                    Release(created.Error);
                    return;
                }
                Use(created.Value);
                Release(null);
            });
        }

        // The component's events and tools follow `agent` from now on (a created or loaded one).
        void Use(TurnloomAgent agent)
        {
            Agent = agent;
            agent.Paused += pause => onPaused.Invoke(pause.NodeName, pause.PendingExit);
            agent.Resumed += (node, to) => onResumed.Invoke(node, to);
            agent.AnswerText += (text, isDelta, isFinal) => { if (isDelta) onAnswerText.Invoke(text); };
            agent.TurnComplete += result => onTurnComplete.Invoke(result.Text);
            foreach (var tool in tools) agent.RegisterTool(tool.Key, tool.Value);
        }

        // True when `call` must wait for the agent (it is kept, see `waiting`).
        bool Waits(Action<TurnloomException> call)
        {
            if (Agent != null && !loading) return false;
            waiting.Add(call);
            return true;
        }

        // Makes (error null) or fails the calls that waited, in order; one may start a Load, and
        // the calls after it wait again.
        void Release(TurnloomException error)
        {
            var calls = waiting.ToArray();
            waiting.Clear();
            for (int i = 0; i < calls.Length; i++)
            {
                if (error == null && loading)
                {
                    for (int j = i; j < calls.Length; j++) waiting.Add(calls[j]);
                    return;
                }
                calls[i](error);
            }
        }

        static void Fail<T>(Action<Result<T>> done, TurnloomException error) => done?.Invoke(new Result<T> { Error = error });

        Action<Result<Step>> Report => step => { if (!step.Ok) onError.Invoke(step.Error.Message); };

        // `call` on the agent now, or once it is there (never, if it could not be created).
        void Do(Action<TurnloomAgent> call)
        {
            if (Waits(error => { if (error == null) Do(call); })) return;
            call(Agent);
        }

        /// <summary>Starts a turn with the player's line.</summary>
        public void SendUserMessage(string text) => Do(agent => agent.SendMessage(text, Report));

        /// <summary>Resumes the pause through its pending exit.</summary>
        public void Resume() => Do(agent => agent.Resume(Report));

        /// <summary>Jumps to <paramref name="resumeNode"/>.</summary>
        public void Resume(string resumeNode) => Do(agent => agent.Resume(resumeNode, Report));

        /// <summary>Answers one pending call.</summary>
        public void ResumeWithToolResult(string callId, string result) =>
            Do(agent => agent.ResumeWithToolResult(new ToolResult(callId, result), Report));

        /// <summary>Answers every pending call.</summary>
        public void ResumeWithToolResults(IList<ToolResult> results) => Do(agent => agent.ResumeWithToolResults(results, Report));

        /// <summary>The node's current params, to change and send back with ChangeParams.</summary>
        public void GetNodeParamsBaseline(string nodeName, Action<Result<NodeParams>> done)
        {
            if (Waits(error => { if (error == null) GetNodeParamsBaseline(nodeName, done); else Fail(done, error); })) return;
            Agent.GetParams(nodeName, done);
        }

        /// <summary>Replaces the node's params; onParamChanged fires when the server took them.</summary>
        public void ChangeParams(string nodeName, NodeParams nodeParams, Action<Result> done = null)
        {
            if (Waits(error =>
            {
                if (error == null) ChangeParams(nodeName, nodeParams, done);
                else done?.Invoke(new Result { Error = error });
            })) return;
            Agent.ChangeParams(nodeName, nodeParams, result =>
            {
                if (result.Ok) onParamChanged.Invoke(nodeName);
                else onError.Invoke(result.Error.Message);
                done?.Invoke(result);
            });
        }

        /// <summary>The game's handler of a tool (runs on the main thread; see TurnloomAgent.RegisterTool).</summary>
        public void RegisterTool(string toolName, ToolHandler handler)
        {
            tools[toolName] = handler;
            Agent?.RegisterTool(toolName, handler);
        }

        /// <summary>A refused registered-tool batch is kept for RetryPausedToolBatch.</summary>
        public bool HasPausedToolBatch() => Agent != null && Agent.HasPausedToolBatch;

        /// <summary>Sends the kept batch again.</summary>
        public void RetryPausedToolBatch() => Do(agent => agent.RetryPausedToolBatch(Report));

        /// <summary>Ends the open turn cancelled.</summary>
        public void Cancel() => Do(agent => agent.Cancel());

        // --- save slots (a server started with --store; without one, InvalidParamValueException) ---

        /// <summary>Saves the agent into the server's slot <paramref name="slot"/> (idle, or paused
        /// with calls pending; AgentBusyException while a turn runs); onSaved fires with the slot's
        /// name when it is written, onError when it is refused.</summary>
        public void Save(string slot, Action<Result<SlotInfo>> done = null)
        {
            if (Waits(error => { if (error == null) Save(slot, done); else Fail(done, error); })) return;
            Agent.Save(slot, saved =>
            {
                if (saved.Ok) onSaved.Invoke(slot);
                else onError.Invoke(saved.Error.Message);
                done?.Invoke(saved);
            });
        }

        /// <summary>Puts the agent of save slot <paramref name="slot"/> in place of this component's
        /// agent, under the same id: the old agent's open turn ends cancelled (onTurnComplete fires
        /// for it), then <see cref="Agent"/> is the loaded agent, with this component's events and
        /// tools, standing where the save was (Agent.WaitAsync gives its pause or its last reply);
        /// onLoaded fires with the slot's name. Refused (no such slot: onError), the agent stays
        /// as it was. Calls made meanwhile wait for the load and go to the agent it leaves.</summary>
        public void Load(string slot, Action<Result<TurnloomAgent>> done = null)
        {
            if (Waits(error => { if (error == null) Load(slot, done); else Fail(done, error); })) return;
            loading = true;
            Agent.Client.Load(slot, Agent.Id, loaded =>
            {
                loading = false;
                if (loaded.Ok)
                {
                    Use(loaded.Value);
                    onLoaded.Invoke(slot);
                }
                else onError.Invoke(loaded.Error.Message);
                try
                {
                    done?.Invoke(loaded);
                }
                finally
                {
                    Release(null);  // a callback that throws does not strand the waiting calls
                }
            });
        }

        /// <summary>A new agent of the scene's client that goes on from this one as it stands (idle
        /// or paused; AgentBusyException while a turn runs), to try another answer: this component
        /// keeps its own agent, and the fork's events are the fork's (drive it with its own calls,
        /// DestroyAsync it when done).</summary>
        public void Fork(Action<Result<TurnloomAgent>> done)
        {
            if (Waits(error => { if (error == null) Fork(done); else Fail(done, error); })) return;
            Agent.Client.Fork(Agent, forked =>
            {
                if (!forked.Ok) onError.Invoke(forked.Error.Message);
                done?.Invoke(forked);
            });
        }

        /// <summary>The save slots of this component's agent, newest first (for a save menu; all
        /// of the server's: TurnloomClientBehaviour.Instance.Client.ListSlots(null, …)).</summary>
        public void ListSlots(Action<Result<List<SlotInfo>>> done)
        {
            if (Waits(error => { if (error == null) ListSlots(done); else Fail(done, error); })) return;
            Agent.Client.ListSlots(Agent.Id, listed =>
            {
                if (!listed.Ok) onError.Invoke(listed.Error.Message);
                done?.Invoke(listed);
            });
        }

        void OnDestroy()
        {
            if (Agent != null && Agent.Client.IsConnected) Agent.Destroy();
        }
    }
}
#endif
