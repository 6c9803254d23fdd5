// The C# side of bench/csharp_bench.py.
//   mono Bench.exe PORT acks N    N resume->ack round trips, one line each: microseconds
//   mono Bench.exe PORT turns N   N full turns through the API; GC figures as key=value lines
// The graph is the Python bench's: Pause "gate" -> CannedResponse "reply" ("ok").
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading.Tasks;
using Turnloom;

static class Bench
{
    static TurnloomClient client;

    static T Pump<T>(Task<T> task)
    {
        while (!task.IsCompleted) client.Update();  // spins, as a game loop at full speed does
        return task.Result;
    }

    static int Main(string[] args)
    {
        int port = int.Parse(args[0]), count = int.Parse(args[2]);
        client = new TurnloomClient(new ClientOptions { Port = port, ClientName = "bench-csharp" });
        Pump(client.ConnectAsync().ContinueWith(t => { t.Wait(); return 0; }));
        var graph = new GraphDescription()
            .AddPause("gate", new PauseParams { DefaultExit = "reply" })
            .AddCannedResponse("reply", new CannedResponseParams("ok"))
            .SetStartNode("gate");
        var agent = Pump(client.CreateAgentAsync(graph));
        if (args[1] == "acks") Acks(agent, count);
        else Turns(agent, count);
        return 0;
    }

    // ResumeAgent written until its Ack is handled on the pumping thread; the turn then
    // completes and a new one pauses, untimed.
    static void Acks(TurnloomAgent agent, int count)
    {
        var watch = new Stopwatch();
        var samples = new List<double>(count);
        for (int i = 0; i < count; i++)
        {
            Pump(agent.SendMessageAsync("hi"));
            var resume = new Dictionary<string, object> { ["type"] = "ResumeAgent", ["agent_id"] = agent.Id };
            watch.Restart();
            var ack = Pump(client.RequestAsync(resume));
            watch.Stop();
            if (Wire.Str(ack, "type") != "Ack" || Wire.Long(ack, "agent_id") != agent.Id)
                throw new InvalidOperationException("not the resume's Ack");
            samples.Add(watch.Elapsed.TotalMilliseconds * 1000);
            var done = Pump(agent.WaitCompleteAsync());
            if (done.Text != "ok") throw new InvalidOperationException("the turn did not complete: " + done.Text);
        }
        foreach (var us in samples) Console.WriteLine(us.ToString("F1", System.Globalization.CultureInfo.InvariantCulture));
    }

    // Full turns (send -> pause, resume -> completion) with events subscribed, as a game has.
    static void Turns(TurnloomAgent agent, int count)
    {
        long texts = 0;
        agent.AnswerText += (text, isDelta, isFinal) => texts++;
        int warmup = Math.Min(1000, count / 10);
        long baseline = 0;
        int[] collections = new int[3];
        var watch = Stopwatch.StartNew();
        for (int i = 0; i < count; i++)
        {
            if (i == warmup)
            {
                baseline = GC.GetTotalMemory(true);
                for (int g = 0; g < 3; g++) collections[g] = GC.CollectionCount(g);
                watch.Restart();
            }
            var step = Pump(agent.SendMessageAsync("hi"));
            if (!step.IsPaused) throw new InvalidOperationException("no pause");
            step = Pump(agent.ResumeAsync());
            if (step.Result == null || step.Result.Text != "ok") throw new InvalidOperationException("no completion");
        }
        double seconds = watch.Elapsed.TotalSeconds;
        long after = GC.GetTotalMemory(true);
        Console.WriteLine("turns=" + (count - warmup));
        Console.WriteLine("seconds=" + seconds.ToString("F3", System.Globalization.CultureInfo.InvariantCulture));
        Console.WriteLine("heap_after_warmup=" + baseline);
        Console.WriteLine("heap_at_end=" + after);
        for (int g = 0; g < 3; g++) Console.WriteLine("gen" + g + "_collections=" + (GC.CollectionCount(g) - collections[g]));
        Console.WriteLine("answer_text_events=" + texts);
    }
}
