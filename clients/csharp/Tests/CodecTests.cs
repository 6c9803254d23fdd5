// The MessagePack codec: the protocol document's example bytes, every type's edges, malformed
// input, fuzzing (random, truncated and mutated bodies: never an exception but the codec's own),
// and the cross-test vectors that tests/test_csharp_client.py generates with Python's msgpack.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Text;
using NUnit.Framework;

namespace Turnloom.Tests
{
    [TestFixture]
    public class CodecTests
    {
        static byte[] Hex(string hex)
        {
            hex = hex.Replace(" ", "");
            var bytes = new byte[hex.Length / 2];
            for (int i = 0; i < bytes.Length; i++) bytes[i] = byte.Parse(hex.Substring(2 * i, 2), NumberStyles.HexNumber);
            return bytes;
        }

        static string HexOf(byte[] bytes) => string.Concat(bytes.Select(b => b.ToString("x2")));

        static object Decode(byte[] bytes, MsgPackLimits limits = null) =>
            new MsgPackCodec(limits).Decode(new ArraySegment<byte>(bytes));

        [Test]
        public void TheProtocolDocumentsCancelExample()
        {
            var message = new Dictionary<string, object> { ["type"] = "Cancel", ["request_id"] = 7L, ["agent_id"] = 2L };
            var body = new MsgPackCodec().EncodeToArray(message);
            // docs/protocol.md section 1: the 35-byte body of the 39-byte frame.
            Assert.AreEqual("83a474797065a643616e63656caa726571756573745f696407a86167656e745f696402", HexOf(body));
            var back = (Dictionary<string, object>)Decode(body);
            CollectionAssert.AreEqual(message, back);
        }

        [Test]
        public void EveryTypeAtItsEdges()
        {
            var codec = new MsgPackCodec(new MsgPackLimits { AllowBinary = true });
            var cases = new Dictionary<string, object>
            {
                ["c0"] = null, ["c2"] = false, ["c3"] = true,
                ["00"] = 0L, ["7f"] = 127L, ["cc80"] = 128L, ["ccff"] = 255L, ["cd0100"] = 256L, ["cdffff"] = 65535L,
                ["ce00010000"] = 65536L, ["ceffffffff"] = 4294967295L, ["cf0000000100000000"] = 4294967296L,
                ["cf7fffffffffffffff"] = long.MaxValue, ["cfffffffffffffffff"] = ulong.MaxValue,
                ["ff"] = -1L, ["e0"] = -32L, ["d0df"] = -33L, ["d080"] = -128L, ["d1ff7f"] = -129L, ["d18000"] = -32768L,
                ["d2ffff7fff"] = -32769L, ["d280000000"] = (long)int.MinValue, ["d3ffffffff7fffffff"] = (long)int.MinValue - 1,
                ["d38000000000000000"] = long.MinValue,
                ["ca3fc00000"] = 1.5f, ["cb3ff8000000000000"] = 1.5, ["cb8000000000000000"] = -0.0,
                ["a0"] = "", ["a161"] = "a", ["c4026869"] = new byte[] { 0x68, 0x69 },
                ["90"] = new List<object>(), ["80"] = new Dictionary<string, object>(),
            };
            foreach (var item in cases)
            {
                Assert.AreEqual(item.Key, HexOf(codec.EncodeToArray(item.Value)), "encoding " + item.Key);
                var back = codec.Decode(new ArraySegment<byte>(Hex(item.Key)));
                Assert.AreEqual(item.Value, back, "decoding " + item.Key);
                if (item.Value != null) Assert.AreEqual(item.Value.GetType(), back.GetType(), "type of " + item.Key);
            }
            // str8 / str16 / str32 and the fix/16-bit container headers.
            Assert.AreEqual("d920", HexOf(codec.EncodeToArray(new string('x', 32))).Substring(0, 4));
            Assert.AreEqual("da0100", HexOf(codec.EncodeToArray(new string('x', 256))).Substring(0, 6));
            Assert.AreEqual("db00010000", HexOf(codec.EncodeToArray(new string('x', 65536))).Substring(0, 10));
            Assert.AreEqual("dc0010", HexOf(codec.EncodeToArray(Enumerable.Repeat((object)1L, 16).ToList())).Substring(0, 6));
            // Non-minimal forms decode too (another encoder may write them).
            Assert.AreEqual(5L, codec.Decode(new ArraySegment<byte>(Hex("d005"))));
            Assert.AreEqual("ab", codec.Decode(new ArraySegment<byte>(Hex("da00026162"))));
            Assert.AreEqual("h\u00e9", codec.Decode(new ArraySegment<byte>(Hex("a368c3a9"))));
        }

        [Test]
        public void MalformedBodiesAreTheCodecsOwnError()
        {
            string[] malformed =
            {
                "",                 // empty
                "81a161c40100",     // bin (the protocol allows none)
                "81a161d40100",     // ext
                "810102",           // an int key
                "81910102",         // an array key
                "8000",             // a trailing byte
                "82a161",           // truncated
                "c1",               // never used
                "c9ffffffff01",     // ext32 with a huge length
                "dbffffffff61",     // str32 longer than the body
                "ddffffffff",       // array32 longer than the body
                "dfffffffff",       // map32 longer than the body
                "82a16101a16102",   // a key twice
                "a2c328",           // not UTF-8
                "cf00000000",       // a uint64 cut off
            };
            foreach (var hex in malformed)
                Assert.Throws<MsgPackException>(() => Decode(Hex(hex)), hex);
            var deep = new StringBuilder("81a161");
            for (int i = 0; i < 100; i++) deep.Append("91");
            deep.Append("00");
            var error = Assert.Throws<MsgPackException>(() => Decode(Hex(deep.ToString())));
            StringAssert.Contains("deeper", error.Message);
            // 64 levels are fine.
            var ok = new StringBuilder();
            for (int i = 0; i < 63; i++) ok.Append("91");
            ok.Append("00");
            Assert.DoesNotThrow(() => Decode(Hex(ok.ToString())));
            Assert.Throws<MsgPackException>(() => new MsgPackCodec().EncodeToArray(new object()));
            Assert.Throws<MsgPackException>(() => new MsgPackCodec().EncodeToArray(new Dictionary<int, object> { [1] = 2 }));
        }

        static byte[] RichMessage()
        {
            var message = new Dictionary<string, object>
            {
                ["type"] = "NodeEvent", ["agent_id"] = 3L, ["turn_id"] = 70000L, ["event"] = "paused", ["node_name"] = "gate",
                ["pending_calls"] = new List<object>
                {
                    new Dictionary<string, object> { ["call_id"] = "c00000000", ["arguments"] = new Dictionary<string, object> { ["on"] = true, ["n"] = -40L } },
                },
                ["awaits_results"] = false, ["timeout_ms"] = 1.25, ["long"] = new string('z', 300), ["f"] = 0.5f, ["nil"] = null,
            };
            return new MsgPackCodec().EncodeToArray(message);
        }

        static void OnlyCodecErrors(MsgPackCodec codec, byte[] bytes)
        {
            try
            {
                codec.Decode(new ArraySegment<byte>(bytes));
            }
            catch (MsgPackException)
            {
            }
            catch (Exception e)
            {
                Assert.Fail("bytes " + HexOf(bytes) + " raised " + e);
            }
        }

        [Test]
        public void FuzzedBodiesRaiseOnlyTheCodecsError()
        {
            var random = new Random(20240531);
            var codec = new MsgPackCodec();
            for (int n = 0; n < 20000; n++)
            {
                var bytes = new byte[random.Next(0, 48)];
                random.NextBytes(bytes);
                // Container and length bytes more often than chance gives them.
                if (bytes.Length > 0 && random.Next(2) == 0) bytes[0] = (byte)(0x80 | random.Next(0x20));
                OnlyCodecErrors(codec, bytes);
            }
            var rich = RichMessage();
            Assert.IsInstanceOf<Dictionary<string, object>>(codec.Decode(new ArraySegment<byte>(rich)));
            for (int cut = 0; cut < rich.Length; cut++)  // every truncation is an error, never a value
                Assert.Throws<MsgPackException>(() => codec.Decode(new ArraySegment<byte>(rich, 0, cut)), "cut at " + cut);
            for (int n = 0; n < 20000; n++)
            {
                var mutated = (byte[])rich.Clone();
                for (int k = random.Next(1, 4); k > 0; k--) mutated[random.Next(mutated.Length)] = (byte)random.Next(256);
                OnlyCodecErrors(codec, mutated);
            }
        }

        // --- the cross-test with Python's msgpack ---------------------------------------------

        /// <summary>A value as text both sides can write: Python writes its expectation, this
        /// side writes what it decoded (floats by their bits, strings by their UTF-8 bytes).</summary>
        public static string Render(object value)
        {
            if (value == null) return "nil";
            if (value is bool b) return b ? "true" : "false";
            if (value is long l) return "i:" + l.ToString(CultureInfo.InvariantCulture);
            if (value is ulong u) return "u:" + u.ToString(CultureInfo.InvariantCulture);
            if (value is float f) return "f32:" + BitConverter.ToUInt32(BitConverter.GetBytes(f), 0).ToString("x8");
            if (value is double d) return "f64:" + BitConverter.DoubleToInt64Bits(d).ToString("x16");
            if (value is string s) return "s:" + HexOf(Encoding.UTF8.GetBytes(s));
            if (value is byte[] bin) return "b:" + HexOf(bin);
            if (value is List<object> list) return "[" + string.Join(",", list.Select(Render)) + "]";
            if (value is Dictionary<string, object> map)
                return "{" + string.Join(",", map.Select(p => Render(p.Key) + "=" + Render(p.Value))) + "}";
            throw new ArgumentException("not a decoded value: " + value.GetType());
        }

        [Test]
        public void PythonVectorsDecodeAndReencodeToTheSameBytes()
        {
            string input = Environment.GetEnvironmentVariable("TURNLOOM_VECTORS_IN");
            string output = Environment.GetEnvironmentVariable("TURNLOOM_VECTORS_OUT");
            if (string.IsNullOrEmpty(input) || string.IsNullOrEmpty(output))
            {
                // Run by tests/test_csharp_client.py, which generates the vectors and checks the
                // answers; it always sets both (and fails when the answers are missing).
                Assert.Ignore("TURNLOOM_VECTORS_IN / TURNLOOM_VECTORS_OUT not set: run through tests/test_csharp_client.py");
            }
            var codec = new MsgPackCodec(new MsgPackLimits { AllowBinary = true });
            var answers = new List<string>();
            int count = 0;
            foreach (var line in File.ReadAllLines(input))
            {
                if (line.Length == 0) continue;
                var parts = line.Split('\t');
                var value = codec.Decode(new ArraySegment<byte>(Hex(parts[1])));
                answers.Add(parts[0] + "\t" + HexOf(codec.EncodeToArray(value)) + "\t" + Render(value));
                count++;
            }
            Assert.Greater(count, 50);
            File.WriteAllLines(output, answers);
        }
    }
}
