// Client-side request timeouts (1003 Timeout, docs/protocol.md section 9): a call armed with a
// limit fails with RequestTimeoutException once the client's clock passes its deadline. The
// check runs inside Update(), so the failure is delivered on the game thread like any answer;
// the request itself may still be carried out by the server, and the connection stays usable.
using System.Collections.Generic;

namespace Turnloom
{
    sealed class Deadlines
    {
        struct Armed
        {
            public long Due;
            public int LimitMs;
            public string Operation;
            public IExpiring Waiter;
        }

        readonly object gate = new object();  // calls may be armed from any thread
        readonly List<Armed> armed = new List<Armed>();
        readonly List<Armed> due = new List<Armed>();  // reused by Expire (game thread only)

        public void Arm(IExpiring waiter, string operation, int limitMs, long now)
        {
            lock (gate) armed.Add(new Armed { Due = now + limitMs, LimitMs = limitMs, Operation = operation, Waiter = waiter });
        }

        /// <summary>Fails the waiters whose deadline is at or before <paramref name="now"/> and
        /// forgets those answered meanwhile. Game thread.</summary>
        public void Expire(long now)
        {
            lock (gate)
            {
                if (armed.Count == 0) return;
                int kept = 0;
                for (int k = 0; k < armed.Count; k++)
                {
                    var item = armed[k];
                    if (item.Waiter.IsDone) continue;
                    if (item.Due <= now) due.Add(item);
                    else armed[kept++] = item;
                }
                armed.RemoveRange(kept, armed.Count - kept);
            }
            foreach (var item in due)
                item.Waiter.Fail(new RequestTimeoutException(item.Operation + " got no answer within " + item.LimitMs +
                    " ms (the server may still carry it out: check the agent's state before retrying a resume)"));
            due.Clear();
        }

        public int Count
        {
            get { lock (gate) return armed.Count; }
        }
    }
}
