// What the server tells about turns, as plain objects: pauses, tool calls, completions, steps,
// and the Result values the callback forms receive.
using System.Collections.Generic;

namespace Turnloom
{
    /// <summary>The answer of a callback-form call without a value: <see cref="Error"/> is null
    /// on success.</summary>
    public struct Result
    {
        /// <summary>Why the call failed, or null.</summary>
        public TurnloomException Error;

        /// <summary>True when the call succeeded.</summary>
        public bool Ok => Error == null;
    }

    /// <summary>The answer of a callback-form call: <see cref="Value"/> on success, else
    /// <see cref="Error"/>.</summary>
    public struct Result<T>
    {
        /// <summary>The answer (default when <see cref="Error"/> is set).</summary>
        public T Value;

        /// <summary>Why the call failed, or null.</summary>
        public TurnloomException Error;

        /// <summary>True when the call succeeded.</summary>
        public bool Ok => Error == null;
    }

    /// <summary>How a turn ended.</summary>
    public enum TurnStatus
    {
        /// <summary>It ran to its end.</summary>
        Success,
        /// <summary>It failed: see TurnResult.ErrorCode.</summary>
        Error,
        /// <summary>Cancel, Destroy, a closed session or a server shutdown ended it.</summary>
        Cancelled,
        /// <summary>A pause's deadline passed with no timeout exit.</summary>
        PauseTimedOut,
        /// <summary>A status this client does not know (a newer server).</summary>
        Unknown,
    }

    /// <summary>A tool call the model made (the NodeEvent tool_call, or an item of a pause's
    /// pending calls).</summary>
    public sealed class ToolCall
    {
        /// <summary>The id a result must echo (c%08x).</summary>
        public string CallId = "";
        /// <summary>The tool's name.</summary>
        public string ToolName = "";
        /// <summary>The arguments as a JSON object of strings.</summary>
        public string ArgumentsJson = "{}";
        /// <summary>The ToolCall node's disposition (await_result …).</summary>
        public string Disposition = "";
        /// <summary>The arguments coerced to the tool's declared types.</summary>
        public Dictionary<string, object> Arguments = new Dictionary<string, object>();
        /// <summary>The ToolCall node that detected it.</summary>
        public string NodeName = "";

        /// <summary>The argument <paramref name="name"/> as text ("" when absent).</summary>
        public string GetString(string name) =>
            Arguments.TryGetValue(name, out var v) && v != null ? Wire.Text(v) : "";

        internal static ToolCall FromWire(Dictionary<string, object> m) => new ToolCall
        {
            CallId = Wire.Str(m, "call_id"),
            ToolName = Wire.Str(m, "tool_name"),
            ArgumentsJson = Wire.Str(m, "arguments_json", "{}"),
            Disposition = Wire.Str(m, "disposition"),
            Arguments = Wire.Map(m, "arguments") ?? new Dictionary<string, object>(),
            NodeName = Wire.Str(m, "node_name"),
        };
    }

    /// <summary>A paused turn: where it stopped and what a plain resume does.</summary>
    public sealed class PauseInfo
    {
        /// <summary>The turn.</summary>
        public long TurnId;
        /// <summary>The node after which the turn paused.</summary>
        public string NodeName = "";
        /// <summary>The exit a plain resume takes (default, tool_called …).</summary>
        public string PendingExit = "";
        /// <summary>The node that exit leads to ("" = the end).</summary>
        public string PendingTarget = "";
        /// <summary>The pause's deadline in ms (0 = none).</summary>
        public long TimeoutMs;
        /// <summary>The tool calls waiting for the game.</summary>
        public List<ToolCall> PendingCalls = new List<ToolCall>();
        /// <summary>A resume must carry one result per pending call.</summary>
        public bool AwaitsResults;

        internal static PauseInfo FromWire(Dictionary<string, object> m)
        {
            var info = new PauseInfo
            {
                TurnId = Wire.Long(m, "turn_id"),
                NodeName = Wire.Str(m, "node_name"),
                PendingExit = Wire.Str(m, "pending_exit"),
                PendingTarget = Wire.Str(m, "pending_target"),
                TimeoutMs = Wire.Long(m, "timeout_ms"),
                AwaitsResults = Wire.Bool(m, "awaits_results"),
            };
            foreach (var item in Wire.List(m, "pending_calls"))
                if (item is Dictionary<string, object> call) info.PendingCalls.Add(ToolCall.FromWire(call));
            return info;
        }
    }

    /// <summary>The one completion of a turn.</summary>
    public sealed class TurnResult
    {
        /// <summary>The turn.</summary>
        public long TurnId;
        /// <summary>How it ended.</summary>
        public TurnStatus Status;
        /// <summary>The status as the server spelled it (success, pause_timed_out …).</summary>
        public string StatusName = "";
        /// <summary>The whole reply.</summary>
        public string Text = "";
        /// <summary>Tokens the models generated in the turn.</summary>
        public long TokensGenerated;
        /// <summary>4001, 4002, 4003 or 2003 when Status is Error; else null.</summary>
        public int? ErrorCode;
        /// <summary>"" unless Status is Error.</summary>
        public string ErrorMessage = "";
        /// <summary>Seconds spent paused.</summary>
        public double PausedDurationS;
        /// <summary>How many times it paused.</summary>
        public long PauseCount;
        /// <summary>Diagnostics (agents created with diagnostics on), else null.</summary>
        public Dictionary<string, object> DebugInfo;

        internal static TurnResult FromWire(Dictionary<string, object> m)
        {
            string status = Wire.Str(m, "status");
            object code = Wire.Get(m, "error_code");
            return new TurnResult
            {
                TurnId = Wire.Long(m, "turn_id"),
                StatusName = status,
                Status = status == "success" ? TurnStatus.Success
                    : status == "error" ? TurnStatus.Error
                    : status == "cancelled" ? TurnStatus.Cancelled
                    : status == "pause_timed_out" ? TurnStatus.PauseTimedOut
                    : TurnStatus.Unknown,
                Text = Wire.Str(m, "text"),
                TokensGenerated = Wire.Long(m, "tokens_generated"),
                ErrorCode = code is long c ? (int?)c : null,
                ErrorMessage = Wire.Str(m, "error_message"),
                PausedDurationS = Wire.Double(m, "paused_duration_s"),
                PauseCount = Wire.Long(m, "pause_count"),
                DebugInfo = Wire.Map(m, "debug_info"),
            };
        }
    }

    /// <summary>Where a SendMessage or a resume got to: the turn's next pause, or its
    /// completion (exactly one of the two is set).</summary>
    public sealed class Step
    {
        /// <summary>The pause, when the turn paused.</summary>
        public PauseInfo Pause;
        /// <summary>The completion, when the turn ended.</summary>
        public TurnResult Result;

        /// <summary>The turn is paused.</summary>
        public bool IsPaused => Pause != null;
        /// <summary>The turn ended.</summary>
        public bool IsComplete => Result != null;
    }

    /// <summary>An agent's state (GetAgentState, AttachAgent).</summary>
    public sealed class AgentState
    {
        /// <summary>idle, running, paused or resuming.</summary>
        public string State = "";
        /// <summary>The open turn, or null when idle.</summary>
        public long? TurnId;
        /// <summary>The pause, when paused.</summary>
        public PauseInfo Pause;
        /// <summary>The last finished turn, if any.</summary>
        public TurnResult LastResult;

        internal static AgentState FromWire(Dictionary<string, object> m)
        {
            var pause = Wire.Map(m, "pause");
            var last = Wire.Map(m, "last_result");
            object turn = Wire.Get(m, "turn_id");
            var info = pause != null ? PauseInfo.FromWire(pause) : null;
            // The state's pause map leaves the turn to the reply's own turn_id.
            if (info != null && info.TurnId == 0 && turn is long paused) info.TurnId = paused;
            return new AgentState
            {
                State = Wire.Str(m, "state"),
                TurnId = turn is long t ? (long?)t : null,
                Pause = info,
                LastResult = last != null ? TurnResult.FromWire(last) : null,
            };
        }
    }

    /// <summary>One result of a tool-results batch.</summary>
    public struct ToolResult
    {
        /// <summary>The call it answers.</summary>
        public string CallId;
        /// <summary>The text the model will see.</summary>
        public string Result;

        /// <summary>A result for <paramref name="callId"/>.</summary>
        public ToolResult(string callId, string result)
        {
            CallId = callId;
            Result = result;
        }
    }

    /// <summary>A save slot in the server's store (docs/reference/durability.md, "Save slots").</summary>
    public sealed class SlotInfo
    {
        /// <summary>Its name (1 to 128 characters).</summary>
        public string Slot = "";
        /// <summary>The agent that was saved into it.</summary>
        public long AgentId;
        /// <summary>When, in absolute seconds (Unix time).</summary>
        public double SavedAt;
        /// <summary>The snapshot's size in bytes.</summary>
        public long Size;

        internal static SlotInfo FromWire(Dictionary<string, object> m) =>
            new SlotInfo
            {
                Slot = Wire.Str(m, "slot"),
                AgentId = Wire.Long(m, "agent_id"),
                SavedAt = Wire.Double(m, "saved_at"),
                Size = Wire.Long(m, "size"),
            };
    }

    /// <summary>A model the server offers (ListModels).</summary>
    public sealed class ModelInfo
    {
        /// <summary>The name graphs use.</summary>
        public string Name = "";
        /// <summary>Whether ToolCall nodes may use it.</summary>
        public bool RendersTools;
        /// <summary>Why it cannot render tools ("" when it can).</summary>
        public string ToolSupportError = "";
        /// <summary>hermes, llama3, mistral or generic.</summary>
        public string ToolCallFamily = "";
        /// <summary>Its context window in tokens; null for the mock.</summary>
        public long? ContextSize;

        internal static ModelInfo FromWire(Dictionary<string, object> m)
        {
            object size = Wire.Get(m, "context_size");
            return new ModelInfo
            {
                Name = Wire.Str(m, "name"),
                RendersTools = Wire.Bool(m, "renders_tools"),
                ToolSupportError = Wire.Str(m, "tool_support_error"),
                ToolCallFamily = Wire.Str(m, "tool_call_family"),
                ContextSize = size is long s ? (long?)s : null,
            };
        }
    }
}
