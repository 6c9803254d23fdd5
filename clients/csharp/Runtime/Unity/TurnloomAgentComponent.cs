// An NPC's agent as a component, in the shape of the original engine's Unity example:
// ChangeParams / GetNodeParamsBaseline / Resume / ResumeWithToolResult(s) / RegisterTool, with
// UnityEvents for pause, resume, text, params changed and turn complete. Every event fires on
// the main thread (TurnloomClientBehaviour pumps the client in Update).
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
    /// or use the default: Pause "listen" (when pauseBeforeAnswer) then Generate "answer".</summary>
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

        /// <summary>The graph to create (default: see the class).</summary>
        public GraphDescription Graph;

        /// <summary>The agent, once created.</summary>
        public TurnloomAgent Agent { get; private set; }

        readonly Dictionary<string, ToolHandler> tools = new Dictionary<string, ToolHandler>();
        readonly List<string> queued = new List<string>();
        bool creating;

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
                if (!created.Ok) { onError.Invoke(created.Error.Message); return; }
                Agent = created.Value;
                Agent.Paused += pause => onPaused.Invoke(pause.NodeName, pause.PendingExit);
                Agent.Resumed += (node, to) => onResumed.Invoke(node, to);
                Agent.AnswerText += (text, isDelta, isFinal) => { if (isDelta) onAnswerText.Invoke(text); };
                Agent.TurnComplete += result => onTurnComplete.Invoke(result.Text);
                foreach (var tool in tools) Agent.RegisterTool(tool.Key, tool.Value);
                foreach (var text in queued) SendUserMessage(text);
                queued.Clear();
            });
        }

        Action<Result<Step>> Report => step => { if (!step.Ok) onError.Invoke(step.Error.Message); };

        /// <summary>Starts a turn with the player's line (queued until the agent exists).</summary>
        public void SendUserMessage(string text)
        {
            if (Agent == null) { queued.Add(text); return; }
            Agent.SendMessage(text, Report);
        }

        /// <summary>Resumes the pause through its pending exit.</summary>
        public void Resume() => Agent?.Resume(Report);

        /// <summary>Jumps to <paramref name="resumeNode"/>.</summary>
        public void Resume(string resumeNode) => Agent?.Resume(resumeNode, Report);

        /// <summary>Answers one pending call.</summary>
        public void ResumeWithToolResult(string callId, string result) =>
            Agent?.ResumeWithToolResult(new ToolResult(callId, result), Report);

        /// <summary>Answers every pending call.</summary>
        public void ResumeWithToolResults(IList<ToolResult> results) => Agent?.ResumeWithToolResults(results, Report);

        /// <summary>The node's current params, to change and send back with ChangeParams.</summary>
        public void GetNodeParamsBaseline(string nodeName, Action<Result<NodeParams>> done) => Agent?.GetParams(nodeName, done);

        /// <summary>Replaces the node's params; onParamChanged fires when the server took them.</summary>
        public void ChangeParams(string nodeName, NodeParams nodeParams, Action<Result> done = null)
        {
            if (Agent == null) return;
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
        public void RetryPausedToolBatch() => Agent?.RetryPausedToolBatch(Report);

        /// <summary>Ends the open turn cancelled.</summary>
        public void Cancel() => Agent?.Cancel();

        void OnDestroy()
        {
            if (Agent != null && Agent.Client.IsConnected) Agent.Destroy();
        }
    }
}
#endif
