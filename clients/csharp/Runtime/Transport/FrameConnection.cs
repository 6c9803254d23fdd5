// One connection's bytes (docs/protocol.md section 1): TCP or TLS, 4-byte little-endian length
// + one msgpack map per frame. Frames are read on one background thread and handed to a
// callback there; writes happen on the caller's thread, one frame at a time.
using System;
using System.Collections.Generic;
using System.IO;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using System.Threading;

namespace Turnloom
{
    /// <summary>TLS settings: off by default. The server's certificate is always verified.</summary>
    public sealed class TlsOptions
    {
        /// <summary>Speak TLS (1.2 or later).</summary>
        public bool Enabled;

        /// <summary>The name the server's certificate must carry ("" = the host).</summary>
        public string ServerName = "";

        /// <summary>A PEM or DER file of the CA to trust instead of the system's store (for a
        /// self-signed development certificate: that certificate itself).</summary>
        public string CaFile = "";

        /// <summary>Mutual TLS: the client's certificate, with its private key (e.g. from a
        /// .pfx file).</summary>
        public X509Certificate2 ClientCertificate;
    }

    sealed class FrameConnection : IDisposable
    {
        public const int HeaderBytes = 4;
        public const int DefaultMaxFrameBytes = 1 << 20;

        readonly TcpClient tcp;
        readonly Stream stream;
        readonly IMessageCodec codec;
        readonly object writeLock = new object();
        readonly MemoryStream outgoing = new MemoryStream(512);
        readonly byte[] header = new byte[HeaderBytes];
        byte[] body = new byte[4096];
        Thread reader;

        public int MaxFrameBytes = DefaultMaxFrameBytes;

        FrameConnection(TcpClient tcp, Stream stream, IMessageCodec codec)
        {
            this.tcp = tcp;
            this.stream = stream;
            this.codec = codec;
        }

        /// <summary>Connects (and shakes hands for TLS) within <paramref name="timeoutMs"/>;
        /// throws ConnectionFailedException with the reason.</summary>
        public static FrameConnection Open(string host, int port, TlsOptions tls, IMessageCodec codec, int timeoutMs)
        {
            string where = host + ":" + port;
            var tcp = new TcpClient { NoDelay = true };
            try
            {
                var connecting = tcp.ConnectAsync(host, port);
                if (!connecting.Wait(timeoutMs))
                    throw new ConnectionFailedException("cannot connect to " + where + ": timed out");
            }
            catch (AggregateException e)
            {
                tcp.Dispose();
                throw new ConnectionFailedException("cannot connect to " + where + ": " + e.InnerException?.Message);
            }
            catch (ConnectionFailedException)
            {
                tcp.Dispose();
                throw;
            }
            tcp.ReceiveTimeout = timeoutMs;  // the handshake's reads; lifted once it is done
            tcp.SendTimeout = timeoutMs;
            Stream stream = tcp.GetStream();
            if (tls != null && tls.Enabled)
            {
                try
                {
                    stream = Secure(stream, tls, string.IsNullOrEmpty(tls.ServerName) ? host : tls.ServerName);
                }
                catch (Exception e) when (e is IOException || e is AuthenticationException || e is NotSupportedException ||
                    e is System.Security.Cryptography.CryptographicException)
                {
                    tcp.Dispose();
                    throw new ConnectionFailedException("TLS handshake with " + where + " failed: " + e.Message);
                }
            }
            return new FrameConnection(tcp, stream, codec);
        }

        static Stream Secure(Stream plain, TlsOptions tls, string serverName)
        {
            X509Certificate2 ca = string.IsNullOrEmpty(tls.CaFile) ? null : new X509Certificate2(tls.CaFile);
            var ssl = new SslStream(plain, false, (sender, certificate, chain, errors) => Trusted(certificate, errors, ca, serverName));
            var mine = new X509CertificateCollection();
            if (tls.ClientCertificate != null) mine.Add(tls.ClientCertificate);
            ssl.AuthenticateAsClient(serverName, mine, SslProtocols.Tls12, false);
            return ssl;
        }

        // The system's verdict, or (with a CA file) the server's certificate being that file's
        // certificate itself (a self-signed development certificate, pinned), or the chain
        // rebuilt to end at exactly that CA; either way it must name serverName.
        static bool Trusted(X509Certificate certificate, SslPolicyErrors errors, X509Certificate2 ca, string serverName)
        {
            if (errors == SslPolicyErrors.None) return true;
            if (ca == null || certificate == null) return false;
            if ((errors & ~SslPolicyErrors.RemoteCertificateChainErrors) != 0) return false;
            var presented = new X509Certificate2(certificate);
            // Checked here, not left to the platform: with a chain error Mono does not report a
            // name mismatch as well (CertificateNames).
            if (!CertificateNames.Names(presented, serverName)) return false;
            // The TLS handshake has proved the server holds this certificate's key, so the same
            // bytes are the same trust as a chain ending there. It is also the one way Mono
            // takes an EC certificate: its X509Chain cannot read EC keys (NotSupportedException).
            if (SameBytes(presented.RawData, ca.RawData)) return true;
            using (var chain = new X509Chain())
            {
                chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
                chain.ChainPolicy.VerificationFlags = X509VerificationFlags.AllowUnknownCertificateAuthority;
                chain.ChainPolicy.ExtraStore.Add(ca);
                try
                {
                    if (!chain.Build(presented)) return false;
                }
                catch (NotSupportedException)
                {
                    return false;  // a key type this runtime's X509Chain cannot check: not trusted
                }
                var root = chain.ChainElements[chain.ChainElements.Count - 1].Certificate;
                return root.Thumbprint == ca.Thumbprint;
            }
        }

        static bool SameBytes(byte[] a, byte[] b)
        {
            if (a == null || b == null || a.Length != b.Length) return false;
            for (int k = 0; k < a.Length; k++)
                if (a[k] != b[k]) return false;
            return true;
        }

        /// <summary>Reads one frame on the calling thread (the handshake, before the reader
        /// runs). Throws IOException when the connection ends, MsgPackException for a bad body.</summary>
        public Dictionary<string, object> ReadFrame()
        {
            ReadExactly(header, HeaderBytes);
            int size = header[0] | (header[1] << 8) | (header[2] << 16) | (header[3] << 24);
            if (size < 0 || size > MaxFrameBytes)
                throw new IOException("the server sent a frame of " + (uint)size + " bytes, over the " + MaxFrameBytes + "-byte limit");
            if (body.Length < size) body = new byte[Math.Max(size, body.Length * 2)];
            ReadExactly(body, size);
            if (!(codec.Decode(new ArraySegment<byte>(body, 0, size)) is Dictionary<string, object> frame))
                throw new MsgPackException("a frame body that is not a map", 0);
            return frame;
        }

        void ReadExactly(byte[] into, int count)
        {
            int have = 0;
            while (have < count)
            {
                int n = stream.Read(into, have, count - have);
                if (n <= 0) throw new EndOfStreamException("the server closed the connection");
                have += n;
            }
        }

        /// <summary>Lifts the handshake's time limits and starts the reader thread: every frame
        /// goes to <paramref name="onFrame"/>, then <paramref name="onEnd"/> once, with why.</summary>
        public void StartReader(Action<Dictionary<string, object>> onFrame, Action<string> onEnd)
        {
            tcp.ReceiveTimeout = 0;
            tcp.SendTimeout = 0;
            reader = new Thread(() =>
            {
                string why;
                try
                {
                    while (true) onFrame(ReadFrame());
                }
                catch (EndOfStreamException e) { why = e.Message; }
                catch (MsgPackException e) { why = "the server sent an unreadable frame: " + e.Message; }
                catch (IOException e) { why = e.Message; }
                catch (ObjectDisposedException) { why = "the connection was closed"; }
                catch (SocketException e) { why = e.Message; }
                onEnd(why);
            })
            { IsBackground = true, Name = "turnloom reader" };
            reader.Start();
        }

        /// <summary>Writes one frame. FrameTooLargeException (nothing written) over the limit;
        /// IOException when the connection is gone.</summary>
        public void Write(Dictionary<string, object> message)
        {
            lock (writeLock)
            {
                outgoing.SetLength(HeaderBytes);
                outgoing.Position = HeaderBytes;
                codec.Encode(message, outgoing);
                int size = (int)outgoing.Length - HeaderBytes;
                if (size > MaxFrameBytes)
                    throw new FrameTooLargeException(Wire.Str(message, "type") + " frame is " + size +
                        " bytes, over the " + MaxFrameBytes + "-byte limit; nothing was sent");
                byte[] bytes = outgoing.GetBuffer();
                bytes[0] = (byte)size;
                bytes[1] = (byte)(size >> 8);
                bytes[2] = (byte)(size >> 16);
                bytes[3] = (byte)(size >> 24);
                try
                {
                    stream.Write(bytes, 0, HeaderBytes + size);
                }
                catch (ObjectDisposedException)
                {
                    throw new IOException("the connection is closed");
                }
                catch (SocketException e)
                {
                    throw new IOException(e.Message);
                }
            }
        }

        /// <summary>Half-closes: the server then releases the session and hangs up.</summary>
        public void ShutdownSend()
        {
            try { tcp.Client.Shutdown(SocketShutdown.Send); }
            catch (SocketException) { }
            catch (ObjectDisposedException) { }
        }

        public void Dispose()
        {
            try { stream.Dispose(); } catch (IOException) { }
            tcp.Dispose();
        }
    }
}
