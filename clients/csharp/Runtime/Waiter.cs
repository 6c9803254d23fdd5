// One pending answer, delivered in both forms the API offers: a Task (made only when the async
// form asked for one) and a callback. Completed on the game thread, inside Update().
using System;
using System.Threading.Tasks;

namespace Turnloom
{
    sealed class Waiter<T>
    {
        readonly TaskCompletionSource<T> task;
        readonly Action<Result<T>> callback;
        readonly TurnloomClient client;

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

        public void Set(T value)
        {
            if (callback != null) client.Guard(callback, new Result<T> { Value = value });
            task?.TrySetResult(value);
        }

        public void Fail(TurnloomException error)
        {
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
