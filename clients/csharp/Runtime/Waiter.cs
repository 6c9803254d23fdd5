// One pending answer, delivered in both forms the API offers: a Task (made only when the async
// form asked for one) and a callback. Completed on the game thread, inside Update(), exactly
// once: an answer that comes after the call timed out (1003) is dropped here.
using System;
using System.Threading.Tasks;

namespace Turnloom
{
    // What the client's deadlines need of a waiter, whatever its T.
    interface IExpiring
    {
        bool IsDone { get; }
        void Fail(TurnloomException error);
    }

    sealed class Waiter<T> : IExpiring
    {
        readonly TaskCompletionSource<T> task;
        readonly Action<Result<T>> callback;
        readonly TurnloomClient client;
        bool done;

        Waiter(TurnloomClient client, TaskCompletionSource<T> task, Action<Result<T>> callback)
        {
            this.client = client;
            this.task = task;
            this.callback = callback;
        }

        public static Waiter<T> ForTask(TurnloomClient client, out Task<T> task)
        {
            var source = new TaskCompletionSource<T>();
            task = source.Task;
            return new Waiter<T>(client, source, null);
        }

        public static Waiter<T> ForCallback(TurnloomClient client, Action<Result<T>> callback) =>
            new Waiter<T>(client, null, callback);

        public bool IsDone => done;

        public void Set(T value)
        {
            if (done) return;
            done = true;
            if (callback != null) client.Guard(callback, new Result<T> { Value = value });
            task?.TrySetResult(value);
        }

        public void Fail(TurnloomException error)
        {
            if (done) return;
            done = true;
            if (callback != null) client.Guard(callback, new Result<T> { Error = error });
            task?.TrySetException(error);
        }
    }

    sealed class Unit
    {
        public static readonly Unit Value = new Unit();
    }

    static class Forms
    {
        // The callback form of a call without a value: Action<Result>.
        public static Action<Result<Unit>> Plain(Action<Result> done) =>
            done == null ? (Action<Result<Unit>>)null : r => done(new Result { Error = r.Error });
    }
}
