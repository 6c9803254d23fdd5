// The hand-over from the socket's reader thread to the game thread. The reader only decodes
// frames and queues them here; everything else (matching replies, routing events, running
// callbacks, completing Tasks) happens when the game thread drains the queue in Update(),
// one item at a time in arrival order. So game code never runs off that thread, and a step
// waiter is always registered (on the Ack) before the next frame is looked at.
using System;
using System.Collections.Concurrent;
using System.Threading;

namespace Turnloom
{
    /// <summary>Where events and callbacks are delivered.</summary>
    public enum DispatchMode
    {
        /// <summary>On whichever thread calls <see cref="TurnloomClient.Update"/> (a
        /// MonoBehaviour's Update): nothing is delivered until it is called.</summary>
        Update,

        /// <summary>Posted to a SynchronizationContext (ClientOptions.Context, else the one
        /// current when the client was made), which runs Update() for you.</summary>
        SynchronizationContext,
    }

    sealed class Inbox
    {
        // Frames (Dictionary), actions (Action) and the end of the connection (Ended).
        readonly ConcurrentQueue<object> items = new ConcurrentQueue<object>();
        readonly SynchronizationContext context;
        readonly SendOrPostCallback pump;
        int posted;

        public sealed class Ended
        {
            public readonly string Why;
            public Ended(string why) { Why = why; }
        }

        public Inbox(SynchronizationContext context, Action drain)
        {
            this.context = context;
            pump = _ =>
            {
                Interlocked.Exchange(ref posted, 0);
                drain();
            };
        }

        public int Count => items.Count;

        public void Add(object item)
        {
            items.Enqueue(item);
            // One post at a time: a burst of frames is drained by one call.
            if (context != null && Interlocked.Exchange(ref posted, 1) == 0) context.Post(pump, null);
        }

        public bool TryTake(out object item) => items.TryDequeue(out item);
    }
}
