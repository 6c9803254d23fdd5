// The client as a scene object: connects when enabled, pumps the client in Update() so every
// event and callback runs on Unity's main thread, disconnects when disabled. Compiled only by
// Unity (the core builds and is tested without it).
#if UNITY_5_3_OR_NEWER
using System;
using UnityEngine;
using UnityEngine.Events;

namespace Turnloom.Unity
{
    /// <summary>Holds the scene's <see cref="TurnloomClient"/>; put one in the first scene.</summary>
    [AddComponentMenu("Turnloom/Turnloom Client")]
    public sealed class TurnloomClientBehaviour : MonoBehaviour
    {
        [Tooltip("The host `python -m turnloom serve` listens on.")]
        public string host = "127.0.0.1";
        [Tooltip("Its port (7411 unless started with --port).")]
        public int port = 7411;
        [Tooltip("The server's auth key, if it has one (prefer loading it from your config).")]
        public string authKey = "";
        [Tooltip("Speak TLS; the server's certificate must chain to the CA file (or the system store).")]
        public bool useTls;
        [Tooltip("A CA (or self-signed certificate) file to trust, for TLS.")]
        public string caFile = "";
        [Tooltip("Keep the client across scene loads.")]
        public bool dontDestroyOnLoad = true;

        /// <summary>The connection succeeded.</summary>
        public UnityEvent onConnected = new UnityEvent();
        /// <summary>Connecting failed or the connection was lost: the error's text.</summary>
        public StringEvent onConnectionError = new StringEvent();

        /// <summary>The scene's client behaviour (the last one enabled).</summary>
        public static TurnloomClientBehaviour Instance { get; private set; }

        /// <summary>The client; made in OnEnable.</summary>
        public TurnloomClient Client { get; private set; }

        /// <summary>Any agent paused: (agentId, nodeName, pendingExit), as the original's
        /// TryllClient.Instance.Paused.</summary>
        public event Action<long, string, string> Paused;

        void OnEnable()
        {
            Instance = this;
            if (dontDestroyOnLoad) DontDestroyOnLoad(gameObject);
            Client = new TurnloomClient(new ClientOptions
            {
                Host = host, Port = port, AuthKey = string.IsNullOrEmpty(authKey) ? null : authKey,
                Tls = new TlsOptions { Enabled = useTls, CaFile = caFile },
                ClientName = Application.productName,
            });
            Client.CallbackFailed += Debug.LogException;
            Client.Paused += (agentId, node, exit) => Paused?.Invoke(agentId, node, exit);
            Client.Disconnected += error => onConnectionError.Invoke(error.Message);
            Client.Connect(result =>
            {
                if (result.Ok) onConnected.Invoke();
                else
                {
                    Debug.LogWarning("turnloom: " + result.Error.Message);
                    onConnectionError.Invoke(result.Error.Message);
                }
            });
        }

        // The game thread's pump: replies, events and callbacks of the frame run here.
        void Update() => Client?.Update();

        void OnDisable()
        {
            // Closes the socket at once: the server cancels the session's open turns and destroys
            // its agents (durable ones are kept). Call Client.DisconnectAsync() first to get
            // their completions as callbacks.
            Client?.Dispose();
            Client = null;
            if (Instance == this) Instance = null;
        }
    }

    /// <summary>A UnityEvent with a string.</summary>
    [Serializable]
    public sealed class StringEvent : UnityEvent<string> { }
}
#endif
