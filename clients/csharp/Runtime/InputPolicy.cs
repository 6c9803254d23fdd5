// What a player's message does when it arrives while the agent's turn is open, and the report
// of what became of each message (docs/reference/turns.md, "Input policies"; on the wire the
// CreateAgent.input_policy field, the SetInputPolicy request and the NodeEvent "message").
using System.Collections.Generic;

namespace Turnloom
{
    /// <summary>What SendMessage does while a turn is open (running, or paused waiting for the
    /// game). On an idle agent every policy simply starts a turn.</summary>
    public enum InputPolicy
    {
        /// <summary>Refused with AgentBusyException (3004); nothing changes. The default.</summary>
        Reject,
        /// <summary>The message waits and starts the next turn when this one ends (at most 8
        /// wait; one more is 3004). Its SendMessage answers at its own turn's first pause or
        /// completion.</summary>
        Enqueue,
        /// <summary>The open turn ends cancelled and the message starts a new turn at once.</summary>
        Interrupt,
        /// <summary>As Interrupt, and the new turn's message is both messages, joined by a newline.</summary>
        Merge,
    }

    /// <summary>What became of a message (MessageEvent.Fate).</summary>
    public enum MessageFate
    {
        /// <summary>It started a turn (at once, or, for a queued one, when the turn before ended).</summary>
        Started,
        /// <summary>It waits in the agent's queue (Enqueue).</summary>
        Queued,
        /// <summary>It cancelled the open turn and started a new one (Interrupt).</summary>
        Interrupted,
        /// <summary>It cancelled the open turn and started one with both messages (Merge).</summary>
        Merged,
        /// <summary>The agent was destroyed while it waited; its SendMessage fails with 3002.</summary>
        Dropped,
        /// <summary>A fate this client does not know (a newer server).</summary>
        Unknown,
    }

    /// <summary>A message's fate, once decided (sent only for agents whose policy is not Reject).</summary>
    public sealed class MessageEvent
    {
        /// <summary>The message's text (for Merged: both messages, joined by a newline).</summary>
        public string Text = "";
        /// <summary>What became of it.</summary>
        public MessageFate Fate;
        /// <summary>The fate as the server spelled it (started, queued …).</summary>
        public string FateName = "";
        /// <summary>The turn it started; null while queued or when dropped.</summary>
        public long? TurnId;
        /// <summary>The turn an Interrupt or Merge cancelled, else null.</summary>
        public long? ReplacedTurnId;
        /// <summary>How many messages wait after this one.</summary>
        public long Queued;

        internal static string WireName(InputPolicy policy)
        {
            switch (policy)
            {
                case InputPolicy.Enqueue: return "enqueue";
                case InputPolicy.Interrupt: return "interrupt";
                case InputPolicy.Merge: return "merge";
                default: return "reject";
            }
        }

        // The policy a reply names; Reject for a name this client does not know.
        internal static InputPolicy PolicyNamed(string name)
        {
            switch (name)
            {
                case "enqueue": return InputPolicy.Enqueue;
                case "interrupt": return InputPolicy.Interrupt;
                case "merge": return InputPolicy.Merge;
                default: return InputPolicy.Reject;
            }
        }

        internal static MessageEvent FromWire(Dictionary<string, object> m)
        {
            string fate = Wire.Str(m, "fate");
            object turn = Wire.Get(m, "turn_id"), replaced = Wire.Get(m, "replaced_turn_id");
            return new MessageEvent
            {
                Text = Wire.Str(m, "text"),
                FateName = fate,
                Fate = fate == "started" ? MessageFate.Started
                    : fate == "queued" ? MessageFate.Queued
                    : fate == "interrupted" ? MessageFate.Interrupted
                    : fate == "merged" ? MessageFate.Merged
                    : fate == "dropped" ? MessageFate.Dropped
                    : MessageFate.Unknown,
                TurnId = turn is long t ? (long?)t : null,
                ReplacedTurnId = replaced is long r ? (long?)r : null,
                Queued = Wire.Long(m, "queued"),
            };
        }
    }
}
