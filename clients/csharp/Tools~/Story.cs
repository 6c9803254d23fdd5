// The cross-client story (tests/test_csharp_client.py runs it beside the Python and C++ ones
// against one server and compares the transcripts): a tool call answered by the game, a
// pause, a param changed while paused, a jump resume and a pause that times out.
//   mono Story.exe PORT
using System;
using System.Threading;
using System.Threading.Tasks;
using Turnloom;

static class Story
{
    const string CheckStock = "{\"name\": \"check_stock\", \"arguments\": {\"item\": \"sword\"}}";

    static TurnloomClient client;

    static T Pump<T>(Task<T> task)
    {
        while (!task.IsCompleted)
            if (client.Update() == 0) Thread.Sleep(1);
        return task.Result;
    }

    static void Pump(Task task)
    {
        while (!task.IsCompleted)
            if (client.Update() == 0) Thread.Sleep(1);
        task.Wait();
    }

    static void Print(Step step)
    {
        if (step.IsPaused)
        {
            var p = step.Pause;
            var calls = p.PendingCalls.ConvertAll(c => c.ToolName + " " + c.ArgumentsJson);
            Console.WriteLine("pause " + p.NodeName + " " + p.PendingExit + " -> '" + p.PendingTarget + "' calls=[" + string.Join("; ", calls) + "]");
        }
        else
        {
            Console.WriteLine("complete " + step.Result.StatusName + " " + step.Result.Text);
        }
    }

    static int Main(string[] args)
    {
        client = new TurnloomClient(new ClientOptions { Port = int.Parse(args[0]), ClientName = "story-csharp" });
        Pump(client.ConnectAsync());
        var shop = Pump(client.CreateAgentAsync(new GraphDescription()
            .AddToolCall("detect", new ToolCallParams
            {
                Tools = { new ToolDefinition("check_stock", "How many of an item the shop has.", new ToolParamDefinition("item", "string", "The item.")) },
                Disposition = ToolCallDisposition.AwaitResult, Mode = ToolCallMode.DetectOnly,
                ToolCalledExit = "gate", NoToolCalledExit = "gate",
            })
            .AddPause("gate", new PauseParams { DefaultExit = "answer" })
            .AddGenerate("answer", new GenerateParams { SystemPrompt = "You are Mira, a shopkeeper." })
            .AddCannedResponse("decline", new CannedResponseParams("Maybe later."))
            .SetStartNode("detect").SetDefaultModelName("mock")));
        var guard = Pump(client.CreateAgentAsync(new GraphDescription()
            .AddPause("guard", new PauseParams { PauseTimeoutMs = 200, TimeoutExit = "slow" })
            .AddCannedResponse("slow", new CannedResponseParams("Too slow."))
            .SetStartNode("guard").SetDefaultModelName("mock")));
        shop.Resumed += (node, to) => Console.WriteLine("resumed " + node + " '" + to + "'");
        guard.Resumed += (node, to) => Console.WriteLine("resumed " + node + " '" + to + "'");

        var step = Pump(shop.SendMessageAsync(CheckStock));
        Print(step);
        Console.WriteLine("game: " + step.Pause.PendingCalls[0].ToolName + " -> 3 in stock");
        step = Pump(shop.ResumeWithToolResultAsync(new ToolResult(step.Pause.PendingCalls[0].CallId, "3 in stock")));
        Print(step);
        var answer = (GenerateParams)Pump(shop.GetParamsAsync("answer"));
        answer.Template = "(a trusted customer) {{human_message}}";
        Pump(shop.ChangeParamsAsync("answer", answer));
        Console.WriteLine("game: answer.template = " + answer.Template);
        Print(Pump(shop.ResumeAsync()));

        Print(Pump(shop.SendMessageAsync("Can I have a discount?")));
        Console.WriteLine("game: jump to decline");
        Print(Pump(shop.ResumeAsync("decline")));

        Print(Pump(guard.SendMessageAsync("Wake up.")));
        Console.WriteLine("game: waits");
        var done = Pump(guard.WaitCompleteAsync());
        Console.WriteLine("complete " + done.StatusName + " " + done.Text);
        Pump(client.DisconnectAsync());
        return 0;
    }
}
