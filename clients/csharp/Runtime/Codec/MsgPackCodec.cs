// A small, strict MessagePack codec for exactly the types the protocol uses. No MessagePack
// package is reachable from the registries this project's machines use, so it is written here;
// it is cross-tested byte for byte against Python's msgpack (tests/test_csharp_client.py).
//
// Encoding picks the smallest form of every value, as msgpack-python does, so a decoded
// value re-encodes to the same bytes. Decoding checks every length against the bytes left
// before it allocates, so a hostile length can cost at most the frame's own size.
using System;
using System.Collections;
using System.Collections.Generic;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;

namespace Turnloom
{
    /// <summary>The built-in <see cref="IMessageCodec"/>.</summary>
    public sealed class MsgPackCodec : IMessageCodec
    {
        static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        readonly MsgPackLimits limits;
        byte[] scratch = new byte[256];
        int length;

        /// <summary>A codec with <paramref name="limits"/> (default: the protocol's).</summary>
        public MsgPackCodec(MsgPackLimits limits = null)
        {
            this.limits = limits ?? MsgPackLimits.Protocol();
        }

        // --- encoding ------------------------------------------------------------------------

        /// <inheritdoc/>
        public void Encode(object value, Stream output)
        {
            length = 0;
            Write(value, 0);
            output.Write(scratch, 0, length);
        }

        /// <summary>The encoding of <paramref name="value"/> as a new array.</summary>
        public byte[] EncodeToArray(object value)
        {
            length = 0;
            Write(value, 0);
            var bytes = new byte[length];
            Buffer.BlockCopy(scratch, 0, bytes, 0, length);
            return bytes;
        }

        void Write(object value, int depth)
        {
            if (depth > limits.MaxDepth)
                throw new MsgPackException("a value nested deeper than " + limits.MaxDepth);
            if (value == null) { Byte(0xc0); return; }
            if (value is bool b) { Byte(b ? (byte)0xc3 : (byte)0xc2); return; }
            if (value is string s) { WriteString(s); return; }
            if (value is long l) { WriteInt(l); return; }
            if (value is int i) { WriteInt(i); return; }
            if (value is ulong u) { WriteUInt(u); return; }
            if (value is uint ui) { WriteUInt(ui); return; }
            if (value is short sh) { WriteInt(sh); return; }
            if (value is ushort us) { WriteUInt(us); return; }
            if (value is byte by) { WriteUInt(by); return; }
            if (value is sbyte sb) { WriteInt(sb); return; }
            if (value is double d) { Byte(0xcb); BigEndian((ulong)BitConverter.DoubleToInt64Bits(d), 8); return; }
            if (value is float f) { Byte(0xca); BigEndian((uint)SingleBits(f), 4); return; }
            if (value is byte[] bin) { WriteBin(bin); return; }
            if (value is Dictionary<string, object> dict)  // the common case: a struct enumerator
            {
                Header(dict.Count, 0x80, 0xde);
                foreach (var pair in dict)
                {
                    WriteString(pair.Key);
                    Write(pair.Value, depth + 1);
                }
                return;
            }
            if (value is IDictionary<string, object> map)
            {
                Header(map.Count, 0x80, 0xde);
                foreach (var pair in map)
                {
                    WriteString(pair.Key);
                    Write(pair.Value, depth + 1);
                }
                return;
            }
            if (value is IDictionary untyped)
            {
                Header(untyped.Count, 0x80, 0xde);
                foreach (DictionaryEntry entry in untyped)
                {
                    if (!(entry.Key is string key))
                        throw new MsgPackException("a map key that is not a string");
                    WriteString(key);
                    Write(entry.Value, depth + 1);
                }
                return;
            }
            if (value is IList list)
            {
                Header(list.Count, 0x90, 0xdc);
                for (int k = 0; k < list.Count; k++) Write(list[k], depth + 1);
                return;
            }
            throw new MsgPackException("cannot encode a " + value.GetType().FullName);
        }

        // Reinterprets a float's bits without unsafe code or an allocation (netstandard2.0 has
        // no BitConverter.SingleToInt32Bits).
        [StructLayout(LayoutKind.Explicit)]
        internal struct FloatBits
        {
            [FieldOffset(0)] public float Single;
            [FieldOffset(0)] public int Int;
        }

        static int SingleBits(float f) => new FloatBits { Single = f }.Int;

        void WriteInt(long v)
        {
            if (v >= 0) { WriteUInt((ulong)v); return; }
            if (v >= -32) { Byte((byte)(sbyte)v); return; }
            if (v >= sbyte.MinValue) { Byte(0xd0); Byte((byte)(sbyte)v); return; }
            if (v >= short.MinValue) { Byte(0xd1); BigEndian((ushort)(short)v, 2); return; }
            if (v >= int.MinValue) { Byte(0xd2); BigEndian((uint)(int)v, 4); return; }
            Byte(0xd3); BigEndian((ulong)v, 8);
        }

        void WriteUInt(ulong v)
        {
            if (v <= 0x7f) Byte((byte)v);
            else if (v <= byte.MaxValue) { Byte(0xcc); Byte((byte)v); }
            else if (v <= ushort.MaxValue) { Byte(0xcd); BigEndian(v, 2); }
            else if (v <= uint.MaxValue) { Byte(0xce); BigEndian(v, 4); }
            else { Byte(0xcf); BigEndian(v, 8); }
        }

        void WriteString(string s)
        {
            int n = StrictUtf8.GetByteCount(s);
            if (n <= 31) Byte((byte)(0xa0 | n));
            else if (n <= byte.MaxValue) { Byte(0xd9); Byte((byte)n); }
            else if (n <= ushort.MaxValue) { Byte(0xda); BigEndian((ulong)n, 2); }
            else { Byte(0xdb); BigEndian((ulong)n, 4); }
            Reserve(n);
            length += StrictUtf8.GetBytes(s, 0, s.Length, scratch, length);
        }

        void WriteBin(byte[] bin)
        {
            int n = bin.Length;
            if (n <= byte.MaxValue) { Byte(0xc4); Byte((byte)n); }
            else if (n <= ushort.MaxValue) { Byte(0xc5); BigEndian((ulong)n, 2); }
            else { Byte(0xc6); BigEndian((ulong)n, 4); }
            Reserve(n);
            Buffer.BlockCopy(bin, 0, scratch, length, n);
            length += n;
        }

        // fix (count <= 15), then 16-bit, then 32-bit: the map and array headers have one shape.
        void Header(int count, byte fix, byte wide16)
        {
            if (count <= 15) Byte((byte)(fix | count));
            else if (count <= ushort.MaxValue) { Byte(wide16); BigEndian((ulong)count, 2); }
            else { Byte((byte)(wide16 + 1)); BigEndian((ulong)count, 4); }
        }

        void Byte(byte b)
        {
            Reserve(1);
            scratch[length++] = b;
        }

        void BigEndian(ulong v, int bytes)
        {
            Reserve(bytes);
            for (int k = bytes - 1; k >= 0; k--)
            {
                scratch[length + k] = (byte)v;
                v >>= 8;
            }
            length += bytes;
        }

        void Reserve(int more)
        {
            if (length + more <= scratch.Length) return;
            int size = scratch.Length;
            while (size < length + more) size *= 2;
            Array.Resize(ref scratch, size);
        }

        // --- decoding ------------------------------------------------------------------------

        /// <inheritdoc/>
        public object Decode(ArraySegment<byte> body)
        {
            if (body.Array == null) throw new MsgPackException("no bytes", 0);
            var reader = new Reader(body.Array, body.Offset, body.Offset + body.Count, limits);
            object value = reader.Value(0);
            if (reader.Position != reader.End)
                throw new MsgPackException((reader.End - reader.Position) + " bytes after the value",
                    reader.Position - body.Offset);
            return value;
        }

        struct Reader
        {
            readonly byte[] data;
            readonly int start;
            readonly MsgPackLimits limits;
            public readonly int End;
            public int Position;

            public Reader(byte[] data, int start, int end, MsgPackLimits limits)
            {
                this.data = data;
                this.start = start;
                this.limits = limits;
                End = end;
                Position = start;
            }

            MsgPackException Fail(string what) => new MsgPackException(what, Position - start);

            byte Next()
            {
                if (Position >= End) throw Fail("truncated: a value was cut off");
                return data[Position++];
            }

            ulong BigEndian(int bytes)
            {
                if (End - Position < bytes) throw Fail("truncated: a value was cut off");
                ulong v = 0;
                for (int k = 0; k < bytes; k++) v = (v << 8) | data[Position++];
                return v;
            }

            // A length that must fit in the bytes left: `each` bytes at least per item.
            int Count(ulong count, int each)
            {
                if (count > (ulong)(End - Position) / (ulong)each)
                    throw Fail("truncated: a length of " + count + " runs past the end");
                return (int)count;
            }

            public object Value(int depth)
            {
                int at = Position;
                byte b = Next();
                if (b <= 0x7f) return (long)b;
                if (b >= 0xe0) return (long)(sbyte)b;
                if (b >= 0xa0 && b <= 0xbf) return Str(b & 0x1f);
                if (b >= 0x90 && b <= 0x9f) return Array((ulong)(b & 0x0f), depth);
                if (b >= 0x80 && b <= 0x8f) return Map((ulong)(b & 0x0f), depth);
                switch (b)
                {
                    case 0xc0: return null;
                    case 0xc2: return false;
                    case 0xc3: return true;
                    case 0xcc: return (long)BigEndian(1);
                    case 0xcd: return (long)BigEndian(2);
                    case 0xce: return (long)BigEndian(4);
                    case 0xcf:
                        {
                            ulong u = BigEndian(8);
                            return u <= long.MaxValue ? (object)(long)u : u;
                        }
                    case 0xd0: return (long)(sbyte)BigEndian(1);
                    case 0xd1: return (long)(short)BigEndian(2);
                    case 0xd2: return (long)(int)BigEndian(4);
                    case 0xd3: return (long)BigEndian(8);
                    case 0xca: return Single((int)BigEndian(4));
                    case 0xcb: return BitConverter.Int64BitsToDouble((long)BigEndian(8));
                    case 0xd9: return Str(Count(BigEndian(1), 1));
                    case 0xda: return Str(Count(BigEndian(2), 1));
                    case 0xdb: return Str(Count(BigEndian(4), 1));
                    case 0xc4: return Bin(BigEndian(1), at);
                    case 0xc5: return Bin(BigEndian(2), at);
                    case 0xc6: return Bin(BigEndian(4), at);
                    case 0xdc: return Array(BigEndian(2), depth);
                    case 0xdd: return Array(BigEndian(4), depth);
                    case 0xde: return Map(BigEndian(2), depth);
                    case 0xdf: return Map(BigEndian(4), depth);
                    case 0xc1:
                        Position = at;
                        throw Fail("byte 0xc1, which msgpack never uses");
                    default:
                        Position = at;
                        throw Fail("an ext value (the protocol allows none)");
                }
            }

            static float Single(int bits) => new FloatBits { Int = bits }.Single;

            string Str(int n)
            {
                n = Count((ulong)n, 1);
                try
                {
                    string s = n == 0 ? string.Empty : StrictUtf8.GetString(data, Position, n);
                    Position += n;
                    return s;
                }
                catch (DecoderFallbackException)
                {
                    throw Fail("a str that is not UTF-8");
                }
            }

            byte[] Bin(ulong count, int at)
            {
                if (!limits.AllowBinary)
                {
                    Position = at;
                    throw Fail("a bin value (the protocol allows none)");
                }
                int n = Count(count, 1);
                var bytes = new byte[n];
                Buffer.BlockCopy(data, Position, bytes, 0, n);
                Position += n;
                return bytes;
            }

            List<object> Array(ulong count, int depth)
            {
                int n = Count(count, 1);
                if (depth >= limits.MaxDepth) throw Fail("nesting deeper than " + limits.MaxDepth);
                var list = new List<object>(Math.Min(n, 1024));
                for (int k = 0; k < n; k++) list.Add(Value(depth + 1));
                return list;
            }

            Dictionary<string, object> Map(ulong count, int depth)
            {
                int n = Count(count, 2);
                if (depth >= limits.MaxDepth) throw Fail("nesting deeper than " + limits.MaxDepth);
                var map = new Dictionary<string, object>(Math.Min(n, 1024));
                for (int k = 0; k < n; k++)
                {
                    int at = Position;
                    byte b = Next();
                    int size;
                    if (b >= 0xa0 && b <= 0xbf) size = b & 0x1f;
                    else if (b == 0xd9) size = Count(BigEndian(1), 1);
                    else if (b == 0xda) size = Count(BigEndian(2), 1);
                    else if (b == 0xdb) size = Count(BigEndian(4), 1);
                    else
                    {
                        Position = at;
                        throw Fail("a map key that is not a string");
                    }
                    string key = Str(size);
                    if (map.ContainsKey(key))
                    {
                        Position = at;
                        throw Fail("the map key '" + key + "' twice");
                    }
                    map.Add(key, Value(depth + 1));
                }
                return map;
            }
        }
    }
}
