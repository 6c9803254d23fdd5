// The protocol's error codes (docs/protocol.md section 6) as exception types: one base per code
// family, one type per code, as the Python client has. The async forms throw them from the
// awaited Task; the callback forms hand them over in Result.Error.
using System;

namespace Turnloom
{
    /// <summary>Every code of docs/protocol.md section 6, plus this client's own (1005).</summary>
    public enum ErrorCode
    {
        /// <summary>Client side: the connection or the session handshake failed.</summary>
        ConnectionFailed = 1001,
        /// <summary>Client side: the connection was lost.</summary>
        ConnectionDropped = 1002,
        /// <summary>Client side: no answer within the time allowed.</summary>
        Timeout = 1003,
        /// <summary>Client side: RetryPausedToolBatch with no kept batch.</summary>
        NoPausedToolBatch = 1005,
        /// <summary>The server is shutting down.</summary>
        ServerShuttingDown = 2001,
        /// <summary>A request before ConfigureSession was acknowledged.</summary>
        SessionNotReady = 2002,
        /// <summary>A server limit or a session quota.</summary>
        SessionLimitExceeded = 2003,
        /// <summary>A missing or wrong auth key.</summary>
        Unauthorized = 2004,
        /// <summary>No agent with that id in this session.</summary>
        InvalidAgentId = 3001,
        /// <summary>The agent was destroyed.</summary>
        AgentAlreadyDestroyed = 3002,
        /// <summary>The graph does not compile.</summary>
        GraphCompilationFailed = 3003,
        /// <summary>A turn is open (or running, for a params change).</summary>
        AgentBusy = 3004,
        /// <summary>No node of that name in the graph.</summary>
        UnknownNode = 3005,
        /// <summary>A structural field would change.</summary>
        ParamNotMutable = 3006,
        /// <summary>A value of the wrong type or out of range.</summary>
        InvalidParamValue = 3007,
        /// <summary>An exit names a node that is not in the graph.</summary>
        InvalidExitTarget = 3008,
        /// <summary>A resume of an agent that is not paused.</summary>
        AgentNotPaused = 3012,
        /// <summary>A tool-results batch that does not fit the pause.</summary>
        InvalidToolResults = 3016,
        /// <summary>In TurnResult.ErrorCode: the model failed.</summary>
        InferenceFailed = 4001,
        /// <summary>In TurnResult.ErrorCode: a generation outlived its time budget.</summary>
        InferenceTimeout = 4002,
        /// <summary>In TurnResult.ErrorCode: the turn walked too many nodes.</summary>
        MaxStepsExceeded = 4003,
        /// <summary>A frame that is not one msgpack map of the protocol.</summary>
        MalformedMessage = 5001,
        /// <summary>A request type the server does not know.</summary>
        UnknownMessageType = 5002,
        /// <summary>A frame over the size limit.</summary>
        FrameTooLarge = 5003,
        /// <summary>A protocol version the server does not speak.</summary>
        ProtocolVersionMismatch = 5004,
    }

    /// <summary>A refused or failed call: the protocol's <see cref="Code"/> and the server's (or
    /// this client's) message.</summary>
    public class TurnloomException : Exception
    {
        /// <summary>The protocol's code; the number for a code newer than this client.</summary>
        public ErrorCode Code { get; }

        /// <summary>The message without the code prefix.</summary>
        public string Reason { get; }

        /// <summary>An error of <paramref name="code"/>.</summary>
        public TurnloomException(ErrorCode code, string message)
            : base("[" + (int)code + " " + code + "] " + message)
        {
            Code = code;
            Reason = message;
        }

        /// <summary>The exception type of <paramref name="code"/> (a family base for a code this
        /// client does not know).</summary>
        public static TurnloomException Of(ErrorCode code, string message)
        {
            switch (code)
            {
                case ErrorCode.ConnectionFailed: return new ConnectionFailedException(message);
                case ErrorCode.ConnectionDropped: return new ConnectionDroppedException(message);
                case ErrorCode.Timeout: return new RequestTimeoutException(message);
                case ErrorCode.NoPausedToolBatch: return new NoPausedToolBatchException(message);
                case ErrorCode.ServerShuttingDown: return new ServerShuttingDownException(message);
                case ErrorCode.SessionNotReady: return new SessionNotReadyException(message);
                case ErrorCode.SessionLimitExceeded: return new SessionLimitExceededException(message);
                case ErrorCode.Unauthorized: return new UnauthorizedException(message);
                case ErrorCode.InvalidAgentId: return new InvalidAgentIdException(message);
                case ErrorCode.AgentAlreadyDestroyed: return new AgentAlreadyDestroyedException(message);
                case ErrorCode.GraphCompilationFailed: return new GraphCompilationFailedException(message);
                case ErrorCode.AgentBusy: return new AgentBusyException(message);
                case ErrorCode.UnknownNode: return new UnknownNodeException(message);
                case ErrorCode.ParamNotMutable: return new ParamNotMutableException(message);
                case ErrorCode.InvalidParamValue: return new InvalidParamValueException(message);
                case ErrorCode.InvalidExitTarget: return new InvalidExitTargetException(message);
                case ErrorCode.AgentNotPaused: return new AgentNotPausedException(message);
                case ErrorCode.InvalidToolResults: return new InvalidToolResultsException(message);
                case ErrorCode.MalformedMessage: return new MalformedMessageException(message);
                case ErrorCode.UnknownMessageType: return new UnknownMessageTypeException(message);
                case ErrorCode.FrameTooLarge: return new FrameTooLargeException(message);
                case ErrorCode.ProtocolVersionMismatch: return new ProtocolVersionMismatchException(message);
            }
            int number = (int)code;
            if (number < 2000) return new ClientException(code, message);
            if (number < 3000) return new ServerException(code, message);
            if (number < 4000) return new AgentException(code, message);
            if (number < 5000) return new InferenceException(code, message);
            return new ProtocolException(code, message);
        }
    }

    /// <summary>1xxx: raised by this client, never sent on the wire.</summary>
    public class ClientException : TurnloomException
    {
        /// <summary>A client-side error.</summary>
        public ClientException(ErrorCode code, string message) : base(code, message) { }
    }

    /// <summary>1001.</summary>
    public sealed class ConnectionFailedException : ClientException
    {
        /// <summary>The connection or handshake failed.</summary>
        public ConnectionFailedException(string message) : base(ErrorCode.ConnectionFailed, message) { }
    }

    /// <summary>1002.</summary>
    public sealed class ConnectionDroppedException : ClientException
    {
        /// <summary>The connection was lost.</summary>
        public ConnectionDroppedException(string message) : base(ErrorCode.ConnectionDropped, message) { }
    }

    /// <summary>1003.</summary>
    public sealed class RequestTimeoutException : ClientException
    {
        /// <summary>No answer in time.</summary>
        public RequestTimeoutException(string message) : base(ErrorCode.Timeout, message) { }
    }

    /// <summary>1005.</summary>
    public sealed class NoPausedToolBatchException : ClientException
    {
        /// <summary>No kept batch to retry.</summary>
        public NoPausedToolBatchException(string message) : base(ErrorCode.NoPausedToolBatch, message) { }
    }

    /// <summary>2xxx: the session or the server as a whole.</summary>
    public class ServerException : TurnloomException
    {
        /// <summary>A session-level error.</summary>
        public ServerException(ErrorCode code, string message) : base(code, message) { }
    }

    /// <summary>2001.</summary>
    public sealed class ServerShuttingDownException : ServerException
    {
        /// <summary>The server is shutting down.</summary>
        public ServerShuttingDownException(string message) : base(ErrorCode.ServerShuttingDown, message) { }
    }

    /// <summary>2002.</summary>
    public sealed class SessionNotReadyException : ServerException
    {
        /// <summary>The session is not configured yet.</summary>
        public SessionNotReadyException(string message) : base(ErrorCode.SessionNotReady, message) { }
    }

    /// <summary>2003.</summary>
    public sealed class SessionLimitExceededException : ServerException
    {
        /// <summary>A limit or quota.</summary>
        public SessionLimitExceededException(string message) : base(ErrorCode.SessionLimitExceeded, message) { }
    }

    /// <summary>2004.</summary>
    public sealed class UnauthorizedException : ServerException
    {
        /// <summary>A missing or wrong auth key.</summary>
        public UnauthorizedException(string message) : base(ErrorCode.Unauthorized, message) { }
    }

    /// <summary>3xxx: a request about an agent was refused; the request changed nothing.</summary>
    public class AgentException : TurnloomException
    {
        /// <summary>An agent-level refusal.</summary>
        public AgentException(ErrorCode code, string message) : base(code, message) { }
    }

    /// <summary>3001.</summary>
    public sealed class InvalidAgentIdException : AgentException
    {
        /// <summary>No such agent in this session.</summary>
        public InvalidAgentIdException(string message) : base(ErrorCode.InvalidAgentId, message) { }
    }

    /// <summary>3002.</summary>
    public sealed class AgentAlreadyDestroyedException : AgentException
    {
        /// <summary>The agent was destroyed.</summary>
        public AgentAlreadyDestroyedException(string message) : base(ErrorCode.AgentAlreadyDestroyed, message) { }
    }

    /// <summary>3003.</summary>
    public sealed class GraphCompilationFailedException : AgentException
    {
        /// <summary>The graph does not compile.</summary>
        public GraphCompilationFailedException(string message) : base(ErrorCode.GraphCompilationFailed, message) { }
    }

    /// <summary>3004.</summary>
    public sealed class AgentBusyException : AgentException
    {
        /// <summary>A turn is open.</summary>
        public AgentBusyException(string message) : base(ErrorCode.AgentBusy, message) { }
    }

    /// <summary>3005.</summary>
    public sealed class UnknownNodeException : AgentException
    {
        /// <summary>No such node.</summary>
        public UnknownNodeException(string message) : base(ErrorCode.UnknownNode, message) { }
    }

    /// <summary>3006.</summary>
    public sealed class ParamNotMutableException : AgentException
    {
        /// <summary>A structural field would change.</summary>
        public ParamNotMutableException(string message) : base(ErrorCode.ParamNotMutable, message) { }
    }

    /// <summary>3007.</summary>
    public sealed class InvalidParamValueException : AgentException
    {
        /// <summary>A wrong or out-of-range value.</summary>
        public InvalidParamValueException(string message) : base(ErrorCode.InvalidParamValue, message) { }
    }

    /// <summary>3008.</summary>
    public sealed class InvalidExitTargetException : AgentException
    {
        /// <summary>An exit to a node that is not there.</summary>
        public InvalidExitTargetException(string message) : base(ErrorCode.InvalidExitTarget, message) { }
    }

    /// <summary>3012.</summary>
    public sealed class AgentNotPausedException : AgentException
    {
        /// <summary>The agent is not paused.</summary>
        public AgentNotPausedException(string message) : base(ErrorCode.AgentNotPaused, message) { }
    }

    /// <summary>3016.</summary>
    public sealed class InvalidToolResultsException : AgentException
    {
        /// <summary>The batch does not fit the pause.</summary>
        public InvalidToolResultsException(string message) : base(ErrorCode.InvalidToolResults, message) { }
    }

    /// <summary>4xxx: how a turn failed (TurnResult.ErrorCode); not raised by calls.</summary>
    public class InferenceException : TurnloomException
    {
        /// <summary>An inference error.</summary>
        public InferenceException(ErrorCode code, string message) : base(code, message) { }
    }

    /// <summary>5xxx: a frame the other side could not use.</summary>
    public class ProtocolException : TurnloomException
    {
        /// <summary>A protocol error.</summary>
        public ProtocolException(ErrorCode code, string message) : base(code, message) { }
    }

    /// <summary>5001.</summary>
    public sealed class MalformedMessageException : ProtocolException
    {
        /// <summary>Not one msgpack map of the protocol.</summary>
        public MalformedMessageException(string message) : base(ErrorCode.MalformedMessage, message) { }
    }

    /// <summary>5002.</summary>
    public sealed class UnknownMessageTypeException : ProtocolException
    {
        /// <summary>An unknown request type.</summary>
        public UnknownMessageTypeException(string message) : base(ErrorCode.UnknownMessageType, message) { }
    }

    /// <summary>5003.</summary>
    public sealed class FrameTooLargeException : ProtocolException
    {
        /// <summary>A frame over the limit (checked before sending: nothing was sent).</summary>
        public FrameTooLargeException(string message) : base(ErrorCode.FrameTooLarge, message) { }
    }

    /// <summary>5004.</summary>
    public sealed class ProtocolVersionMismatchException : ProtocolException
    {
        /// <summary>The server speaks another version.</summary>
        public ProtocolVersionMismatchException(string message) : base(ErrorCode.ProtocolVersionMismatch, message) { }
    }
}
