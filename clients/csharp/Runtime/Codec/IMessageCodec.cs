// The one seam between the client and its MessagePack implementation: a project that already
// has MessagePack-CSharp can wrap it in this interface and pass it in ClientOptions.Codec.
using System;
using System.IO;

namespace Turnloom
{
    /// <summary>
    /// Encodes and decodes the values of the wire protocol: null, bool, integers (long, or ulong
    /// above long.MaxValue), float (float32), double (float64), string, byte[] (bin), lists
    /// (List&lt;object&gt;) and maps with string keys (Dictionary&lt;string, object&gt;, in the
    /// order the keys came).
    /// </summary>
    public interface IMessageCodec
    {
        /// <summary>Writes the encoding of <paramref name="value"/> to <paramref name="output"/>.
        /// Throws <see cref="MsgPackException"/> for a value it cannot encode. Called by one
        /// thread at a time.</summary>
        void Encode(object value, Stream output);

        /// <summary>Decodes exactly one value filling <paramref name="body"/> (no trailing
        /// bytes). Throws <see cref="MsgPackException"/>, and nothing else, for bytes that are
        /// not that. Called by one thread at a time.</summary>
        object Decode(ArraySegment<byte> body);
    }

    /// <summary>Bytes that are not a value of the protocol, or a value that cannot be encoded:
    /// the only exception the codec throws.</summary>
    public sealed class MsgPackException : Exception
    {
        /// <summary>Where in the input it went wrong (-1 when encoding).</summary>
        public int Offset { get; }

        /// <summary>What is wrong, and where.</summary>
        public MsgPackException(string message, int offset = -1)
            : base(offset >= 0 ? message + " (at byte " + offset + ")" : message)
        {
            Offset = offset;
        }
    }

    /// <summary>The codec's limits, as strict as the server's reader.</summary>
    public sealed class MsgPackLimits
    {
        /// <summary>Containers nested deeper than this are refused (it bounds the recursion).</summary>
        public int MaxDepth = 64;

        /// <summary>The protocol never uses bin; frames carrying one are refused unless this is set
        /// (the cross-test vectors set it to check the type itself).</summary>
        public bool AllowBinary;

        /// <summary>The defaults: depth 64, no bin.</summary>
        public static MsgPackLimits Protocol() => new MsgPackLimits();
    }
}
