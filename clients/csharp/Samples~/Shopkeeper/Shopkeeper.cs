// The shopkeeper: Mira's turn pauses before she answers; the game changes her prompt for a
// trusted customer, and resumes. Her stock is a tool the game answers.
//
// Scene: one GameObject with TurnloomClientBehaviour; Mira's GameObject with
// TurnloomAgentComponent and this script. Start `python -m turnloom serve --mock`, press Play.
#if UNITY_5_3_OR_NEWER
using Turnloom;
using Turnloom.Unity;
using UnityEngine;

[RequireComponent(typeof(TurnloomAgentComponent))]
public sealed class Shopkeeper : MonoBehaviour
{
    public bool trustedCustomer = true;

    TurnloomAgentComponent agentComp;

    void Start()
    {
        agentComp = GetComponent<TurnloomAgentComponent>();
        agentComp.systemPrompt = "You are Mira, a shopkeeper.";
        agentComp.onTurnComplete.AddListener(text => Debug.Log("Mira: " + text));
        agentComp.RegisterTool("check_stock", call => "{\"swords\": 3}");

        // Runs on the main thread, from TurnloomClientBehaviour's Update.
        TurnloomClientBehaviour.Instance.Paused += (agentId, nodeName, pendingExit) =>
        {
            if (agentComp.Agent == null || agentId != agentComp.Agent.Id || nodeName != "listen") return;
            if (!trustedCustomer)
            {
                agentComp.Resume();
                return;
            }
            agentComp.GetNodeParamsBaseline("answer", baseline =>
            {
                var p = (GenerateParams)baseline.Value;
                p.Template = "(a trusted customer) {{human_message}}";
                agentComp.ChangeParams("answer", p, err =>
                {
                    if (err.Ok) agentComp.Resume();
                    else Debug.LogWarning(err.Error.Message);
                });
            });
        };
        agentComp.SendUserMessage("Do you sell swords?");
    }
}
#endif
