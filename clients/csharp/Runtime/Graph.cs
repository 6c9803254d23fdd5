// Graphs and node params as C# objects (docs/protocol.md section 7): every field with the
// protocol's default, turned into the wire's maps and read back from GetParams.
using System;
using System.Collections.Generic;

namespace Turnloom
{
    /// <summary>Where a Generate node's rendered template goes, relative to the user message.</summary>
    public enum Placement { InPlaceOfUser, BeforeUserAsUser, BeforeUserAsSystem, AfterUserAsUser, AfterUserAsSystem }

    /// <summary>Which line a CannedResponse node says.</summary>
    public enum Selection { First, Random, Cycle }

    /// <summary>What a ToolCall node does with a detected call.</summary>
    public enum ToolCallDisposition { RouteOnly, Acknowledge, Notify, NotifyAndAcknowledge, Pause, PauseAndAcknowledge, AwaitResult }

    /// <summary>What a ToolCall node does with the model's text.</summary>
    public enum ToolCallMode { DetectOnly, CallOrAnswer }

    static class EnumWire
    {
        // PascalCase <-> snake_case: InPlaceOfUser <-> in_place_of_user.
        public static string Name<T>(T value) where T : struct
        {
            string s = value.ToString();
            var chars = new System.Text.StringBuilder(s.Length + 8);
            for (int i = 0; i < s.Length; i++)
            {
                if (char.IsUpper(s[i]) && i > 0) chars.Append('_');
                chars.Append(char.ToLowerInvariant(s[i]));
            }
            return chars.ToString();
        }

        public static T Parse<T>(string name, T otherwise) where T : struct
        {
            foreach (T value in Enum.GetValues(typeof(T)))
                if (Name(value) == name) return value;
            return otherwise;
        }
    }

    /// <summary>Sampling of a model-using node (the sampling map).</summary>
    public sealed class SamplingParams
    {
        /// <summary>0 = greedy.</summary>
        public double Temperature = 0.7;
        /// <summary>Nucleus sampling; 1 = off.</summary>
        public double TopP = 0.95;
        /// <summary>0 = off.</summary>
        public long TopK = 40;
        /// <summary>0 = off.</summary>
        public double MinP = 0.05;
        /// <summary>1 = off.</summary>
        public double RepeatPenalty = 1.1;
        /// <summary>Longest reply, in tokens.</summary>
        public long MaxTokens = 256;
        /// <summary>-1 = random.</summary>
        public long Seed = -1;
        /// <summary>Time budget of one generation; 0 = none.</summary>
        public long TimeoutMs;

        internal Dictionary<string, object> ToWire() => new Dictionary<string, object>
        {
            ["temperature"] = Temperature, ["top_p"] = TopP, ["top_k"] = TopK, ["min_p"] = MinP,
            ["repeat_penalty"] = RepeatPenalty, ["max_tokens"] = MaxTokens, ["seed"] = Seed,
            ["timeout_ms"] = TimeoutMs,
        };

        internal static SamplingParams FromWire(Dictionary<string, object> m)
        {
            var p = new SamplingParams();
            if (m == null) return p;
            p.Temperature = Wire.Double(m, "temperature");
            p.TopP = Wire.Double(m, "top_p");
            p.TopK = Wire.Long(m, "top_k");
            p.MinP = Wire.Double(m, "min_p");
            p.RepeatPenalty = Wire.Double(m, "repeat_penalty");
            p.MaxTokens = Wire.Long(m, "max_tokens");
            p.Seed = Wire.Long(m, "seed");
            p.TimeoutMs = Wire.Long(m, "timeout_ms");
            return p;
        }
    }

    /// <summary>How much of the dialog a node's prompt keeps (the history map).</summary>
    public sealed class HistoryParams
    {
        /// <summary>Leave out the oldest exchanges when the prompt would not fit.</summary>
        public bool Trim = true;
        /// <summary>After trimming, the prompt fills at most this share.</summary>
        public double TrimTo = 0.75;
        /// <summary>The first N exchanges are never left out.</summary>
        public long KeepFirst;
        /// <summary>A smaller prompt budget in tokens; 0 = the model's context.</summary>
        public long MaxPromptTokens;

        internal Dictionary<string, object> ToWire() => new Dictionary<string, object>
        {
            ["trim"] = Trim, ["trim_to"] = TrimTo, ["keep_first"] = KeepFirst,
            ["max_prompt_tokens"] = MaxPromptTokens,
        };

        internal static HistoryParams FromWire(Dictionary<string, object> m)
        {
            var p = new HistoryParams();
            if (m == null) return p;
            p.Trim = Wire.Bool(m, "trim");
            p.TrimTo = Wire.Double(m, "trim_to");
            p.KeepFirst = Wire.Long(m, "keep_first");
            p.MaxPromptTokens = Wire.Long(m, "max_prompt_tokens");
            return p;
        }
    }

    /// <summary>One argument of a tool.</summary>
    public sealed class ToolParamDefinition
    {
        /// <summary>The argument's name.</summary>
        public string Name = "";
        /// <summary>Its JSON Schema type: string, boolean, integer, number, array, object.</summary>
        public string Type = "string";
        /// <summary>What it means, for the model.</summary>
        public string Description = "";
        /// <summary>For a string: the only values it may take (empty = any).</summary>
        public List<string> Enum = new List<string>();

        /// <summary>An empty argument.</summary>
        public ToolParamDefinition() { }

        /// <summary>An argument named <paramref name="name"/>.</summary>
        public ToolParamDefinition(string name, string type, string description, params string[] values)
        {
            Name = name;
            Type = type;
            Description = description;
            Enum = new List<string>(values);
        }

        internal Dictionary<string, object> ToWire() => new Dictionary<string, object>
        {
            ["name"] = Name, ["type"] = Type, ["description"] = Description, ["enum"] = new List<object>(Enum),
        };

        internal static ToolParamDefinition FromWire(Dictionary<string, object> m) => new ToolParamDefinition
        {
            Name = Wire.Str(m, "name"),
            Type = Wire.Str(m, "type", "string"),
            Description = Wire.Str(m, "description"),
            Enum = Wire.Strings(m, "enum"),
        };
    }

    /// <summary>A tool offered to the model.</summary>
    public sealed class ToolDefinition
    {
        /// <summary>The name the model calls it by.</summary>
        public string Name = "";
        /// <summary>What it does, for the model.</summary>
        public string Description = "";
        /// <summary>Its arguments (all required).</summary>
        public List<ToolParamDefinition> Parameters = new List<ToolParamDefinition>();

        /// <summary>An empty tool.</summary>
        public ToolDefinition() { }

        /// <summary>A tool named <paramref name="name"/>.</summary>
        public ToolDefinition(string name, string description, params ToolParamDefinition[] parameters)
        {
            Name = name;
            Description = description;
            Parameters = new List<ToolParamDefinition>(parameters);
        }

        internal Dictionary<string, object> ToWire()
        {
            var items = new List<object>();
            foreach (var p in Parameters) items.Add(p.ToWire());
            return new Dictionary<string, object> { ["name"] = Name, ["description"] = Description, ["parameters"] = items };
        }

        internal static ToolDefinition FromWire(Dictionary<string, object> m)
        {
            var tool = new ToolDefinition { Name = Wire.Str(m, "name"), Description = Wire.Str(m, "description") };
            foreach (var item in Wire.List(m, "parameters"))
                if (item is Dictionary<string, object> p) tool.Parameters.Add(ToolParamDefinition.FromWire(p));
            return tool;
        }
    }

    /// <summary>The params of one node: <see cref="PauseParams"/>, <see cref="GenerateParams"/>,
    /// <see cref="CannedResponseParams"/> or <see cref="ToolCallParams"/>.</summary>
    public abstract class NodeParams
    {
        /// <summary>The node type's wire name (Pause, Generate …).</summary>
        public abstract string NodeType { get; }

        /// <summary>Every field, as the wire's params map.</summary>
        public abstract Dictionary<string, object> ToWire();

        /// <summary>The params of a GetParams reply (null for an unknown node type).</summary>
        public static NodeParams FromWire(string nodeType, Dictionary<string, object> m)
        {
            m = m ?? new Dictionary<string, object>();
            switch (nodeType)
            {
                case "Pause": return PauseParams.Read(m);
                case "Generate": return GenerateParams.Read(m);
                case "CannedResponse": return CannedResponseParams.Read(m);
                case "ToolCall": return ToolCallParams.Read(m);
                default: return null;
            }
        }
    }

    /// <summary>A checkpoint: the turn pauses right after it.</summary>
    public sealed class PauseParams : NodeParams
    {
        /// <summary>0 = wait forever; otherwise the pause's deadline. Structural.</summary>
        public long PauseTimeoutMs;
        /// <summary>Taken on a plain resume. Structural.</summary>
        public string DefaultExit = "";
        /// <summary>Taken when the pause times out; "" = end pause_timed_out. Structural.</summary>
        public string TimeoutExit = "";

        /// <inheritdoc/>
        public override string NodeType => "Pause";

        /// <inheritdoc/>
        public override Dictionary<string, object> ToWire() => new Dictionary<string, object>
        {
            ["pause_timeout_ms"] = PauseTimeoutMs, ["default_exit"] = DefaultExit, ["timeout_exit"] = TimeoutExit,
        };

        internal static PauseParams Read(Dictionary<string, object> m) => new PauseParams
        {
            PauseTimeoutMs = Wire.Long(m, "pause_timeout_ms"),
            DefaultExit = Wire.Str(m, "default_exit"),
            TimeoutExit = Wire.Str(m, "timeout_exit"),
        };
    }

    /// <summary>A model's reply.</summary>
    public sealed class GenerateParams : NodeParams
    {
        /// <summary>"" = no system message.</summary>
        public string SystemPrompt = "";
        /// <summary>The prompt text this node adds (Mustache over {{human_message}}).</summary>
        public string Template = "{{human_message}}";
        /// <summary>Where the rendered template goes.</summary>
        public Placement Placement = Placement.InPlaceOfUser;
        /// <summary>Stream token deltas as AnswerText.</summary>
        public bool Stream = true;
        /// <summary>"" = the graph's default model. Structural.</summary>
        public string ModelName = "";
        /// <summary>Sampling.</summary>
        public SamplingParams Sampling = new SamplingParams();
        /// <summary>Taken after the reply. Structural.</summary>
        public string DefaultExit = "";
        /// <summary>Prompt history.</summary>
        public HistoryParams History = new HistoryParams();

        /// <inheritdoc/>
        public override string NodeType => "Generate";

        /// <inheritdoc/>
        public override Dictionary<string, object> ToWire() => new Dictionary<string, object>
        {
            ["system_prompt"] = SystemPrompt, ["template"] = Template, ["placement"] = EnumWire.Name(Placement),
            ["stream"] = Stream, ["model_name"] = ModelName, ["sampling"] = Sampling.ToWire(),
            ["default_exit"] = DefaultExit, ["history"] = History.ToWire(),
        };

        internal static GenerateParams Read(Dictionary<string, object> m) => new GenerateParams
        {
            SystemPrompt = Wire.Str(m, "system_prompt"),
            Template = Wire.Str(m, "template"),
            Placement = EnumWire.Parse(Wire.Str(m, "placement"), Placement.InPlaceOfUser),
            Stream = Wire.Bool(m, "stream"),
            ModelName = Wire.Str(m, "model_name"),
            Sampling = SamplingParams.FromWire(Wire.Map(m, "sampling")),
            DefaultExit = Wire.Str(m, "default_exit"),
            History = HistoryParams.FromWire(Wire.Map(m, "history")),
        };
    }

    /// <summary>A fixed line, no model.</summary>
    public sealed class CannedResponseParams : NodeParams
    {
        /// <summary>The replies to pick from (at least one).</summary>
        public List<string> Lines = new List<string>();
        /// <summary>Which line.</summary>
        public Selection Selection = Selection.First;
        /// <summary>Taken after the line. Structural.</summary>
        public string DefaultExit = "";

        /// <summary>No lines yet.</summary>
        public CannedResponseParams() { }

        /// <summary>These <paramref name="lines"/>.</summary>
        public CannedResponseParams(params string[] lines) { Lines = new List<string>(lines); }

        /// <inheritdoc/>
        public override string NodeType => "CannedResponse";

        /// <inheritdoc/>
        public override Dictionary<string, object> ToWire() => new Dictionary<string, object>
        {
            ["lines"] = new List<object>(Lines), ["selection"] = EnumWire.Name(Selection), ["default_exit"] = DefaultExit,
        };

        internal static CannedResponseParams Read(Dictionary<string, object> m) => new CannedResponseParams
        {
            Lines = Wire.Strings(m, "lines"),
            Selection = EnumWire.Parse(Wire.Str(m, "selection"), Selection.First),
            DefaultExit = Wire.Str(m, "default_exit"),
        };
    }

    /// <summary>Offers tools to the model and detects its calls.</summary>
    public sealed class ToolCallParams : NodeParams
    {
        /// <summary>The tools offered (at least one). Structural.</summary>
        public List<ToolDefinition> Tools = new List<ToolDefinition>();
        /// <summary>What a detected call does. Structural.</summary>
        public ToolCallDisposition Disposition = ToolCallDisposition.Acknowledge;
        /// <summary>What happens to the model's text.</summary>
        public ToolCallMode Mode = ToolCallMode.CallOrAnswer;
        /// <summary>"" = no system message.</summary>
        public string SystemPrompt = "";
        /// <summary>"" = "ok".</summary>
        public string AcknowledgeText = "";
        /// <summary>"" = the graph's default model. Structural.</summary>
        public string ModelName = "";
        /// <summary>Sampling.</summary>
        public SamplingParams Sampling = new SamplingParams();
        /// <summary>For pausing dispositions; 0 = wait forever. Structural.</summary>
        public long PauseTimeoutMs;
        /// <summary>Taken when a declared tool was called. Structural.</summary>
        public string ToolCalledExit = "";
        /// <summary>Taken when none was. Structural.</summary>
        public string NoToolCalledExit = "";
        /// <summary>Taken when the pause times out. Structural.</summary>
        public string TimeoutExit = "";
        /// <summary>"generate", "score" or "" (the model's default).</summary>
        public string Decision = "";
        /// <summary>Prompt history.</summary>
        public HistoryParams History = new HistoryParams();

        /// <inheritdoc/>
        public override string NodeType => "ToolCall";

        /// <inheritdoc/>
        public override Dictionary<string, object> ToWire()
        {
            var tools = new List<object>();
            foreach (var t in Tools) tools.Add(t.ToWire());
            return new Dictionary<string, object>
            {
                ["tools"] = tools, ["disposition"] = EnumWire.Name(Disposition), ["mode"] = EnumWire.Name(Mode),
                ["system_prompt"] = SystemPrompt, ["acknowledge_text"] = AcknowledgeText, ["model_name"] = ModelName,
                ["sampling"] = Sampling.ToWire(), ["pause_timeout_ms"] = PauseTimeoutMs,
                ["tool_called_exit"] = ToolCalledExit, ["no_tool_called_exit"] = NoToolCalledExit,
                ["timeout_exit"] = TimeoutExit, ["decision"] = Decision, ["history"] = History.ToWire(),
            };
        }

        internal static ToolCallParams Read(Dictionary<string, object> m)
        {
            var p = new ToolCallParams
            {
                Disposition = EnumWire.Parse(Wire.Str(m, "disposition"), ToolCallDisposition.Acknowledge),
                Mode = EnumWire.Parse(Wire.Str(m, "mode"), ToolCallMode.CallOrAnswer),
                SystemPrompt = Wire.Str(m, "system_prompt"),
                AcknowledgeText = Wire.Str(m, "acknowledge_text"),
                ModelName = Wire.Str(m, "model_name"),
                Sampling = SamplingParams.FromWire(Wire.Map(m, "sampling")),
                PauseTimeoutMs = Wire.Long(m, "pause_timeout_ms"),
                ToolCalledExit = Wire.Str(m, "tool_called_exit"),
                NoToolCalledExit = Wire.Str(m, "no_tool_called_exit"),
                TimeoutExit = Wire.Str(m, "timeout_exit"),
                Decision = Wire.Str(m, "decision"),
                History = HistoryParams.FromWire(Wire.Map(m, "history")),
            };
            foreach (var item in Wire.List(m, "tools"))
                if (item is Dictionary<string, object> t) p.Tools.Add(ToolDefinition.FromWire(t));
            return p;
        }
    }

    /// <summary>A graph of named nodes, built in C# and sent with CreateAgent.</summary>
    public sealed class GraphDescription
    {
        readonly List<KeyValuePair<string, NodeParams>> nodes = new List<KeyValuePair<string, NodeParams>>();

        /// <summary>The node every turn starts at.</summary>
        public string StartNode = "";

        /// <summary>The model of model-using nodes whose ModelName is "".</summary>
        public string DefaultModelName = "";

        /// <summary>Adds a node (any params type); nodes keep their order.</summary>
        public GraphDescription AddNode(string name, NodeParams node)
        {
            nodes.Add(new KeyValuePair<string, NodeParams>(name, node));
            return this;
        }

        /// <summary>Adds a Pause node.</summary>
        public GraphDescription AddPause(string name, PauseParams p) => AddNode(name, p);
        /// <summary>Adds a Generate node.</summary>
        public GraphDescription AddGenerate(string name, GenerateParams p) => AddNode(name, p);
        /// <summary>Adds a CannedResponse node.</summary>
        public GraphDescription AddCannedResponse(string name, CannedResponseParams p) => AddNode(name, p);
        /// <summary>Adds a ToolCall node.</summary>
        public GraphDescription AddToolCall(string name, ToolCallParams p) => AddNode(name, p);

        /// <summary>Sets the start node.</summary>
        public GraphDescription SetStartNode(string name) { StartNode = name; return this; }

        /// <summary>Sets the default model.</summary>
        public GraphDescription SetDefaultModelName(string name) { DefaultModelName = name; return this; }

        /// <summary>The graph map of CreateAgent.</summary>
        public Dictionary<string, object> ToWire()
        {
            var items = new List<object>(nodes.Count);
            foreach (var node in nodes)
                items.Add(new Dictionary<string, object>
                {
                    ["name"] = node.Key, ["type"] = node.Value.NodeType, ["params"] = node.Value.ToWire(),
                });
            return new Dictionary<string, object>
            {
                ["nodes"] = items, ["start_node"] = StartNode, ["default_model_name"] = DefaultModelName,
            };
        }
    }
}
