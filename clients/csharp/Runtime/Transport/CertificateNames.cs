// Whether a server certificate names the host the client meant (RFC 6125 as Python's ssl
// checks it: the subjectAltName's DNS entries, a wildcard only as the whole leftmost label, and
// its IP entries for an address; the subject's CN is not looked at). The client checks this
// itself whenever it trusts a certificate the platform did not (a CA file): Mono reports only
// the chain error then, never the name mismatch, so forgiving that error must not forgive a
// certificate made out to another name.
using System;
using System.Collections.Generic;
using System.Net;
using System.Security.Cryptography.X509Certificates;

namespace Turnloom
{
    static class CertificateNames
    {
        const string SubjectAltNameOid = "2.5.29.17";

        /// <summary>True when <paramref name="certificate"/>'s subjectAltName holds
        /// <paramref name="serverName"/> (a DNS name or an IP address).</summary>
        public static bool Names(X509Certificate2 certificate, string serverName)
        {
            var dns = new List<string>();
            var addresses = new List<byte[]>();
            foreach (var extension in certificate.Extensions)
                if (extension.Oid != null && extension.Oid.Value == SubjectAltNameOid && !Read(extension.RawData, dns, addresses))
                    return false;  // unreadable: not a name we can vouch for
            if (IPAddress.TryParse(serverName, out IPAddress address))
            {
                byte[] wanted = address.GetAddressBytes();
                foreach (var entry in addresses)
                    if (Equal(entry, wanted)) return true;
                return false;
            }
            string host = serverName.TrimEnd('.').ToLowerInvariant();
            foreach (var name in dns)
                if (Matches(name.TrimEnd('.').ToLowerInvariant(), host)) return true;
            return false;
        }

        static bool Matches(string pattern, string host)
        {
            if (pattern.Length == 0) return false;
            if (!pattern.StartsWith("*.", StringComparison.Ordinal)) return pattern == host;
            int dot = host.IndexOf('.');
            // "*.example.com" covers "shop.example.com", not "example.com" nor "a.b.example.com".
            return dot > 0 && host.Substring(dot) == pattern.Substring(1) && pattern.IndexOf('*', 1) < 0;
        }

        // GeneralNames ::= SEQUENCE OF GeneralName; dNSName is [2] IA5String, iPAddress is
        // [7] OCTET STRING (both primitive, implicitly tagged). Other kinds are skipped.
        static bool Read(byte[] der, List<string> dns, List<byte[]> addresses)
        {
            int at = 0;
            if (!Header(der, ref at, out int tag, out int length) || tag != 0x30 || at + length != der.Length) return false;
            while (at < der.Length)
            {
                if (!Header(der, ref at, out tag, out length)) return false;
                if (tag == 0x82)
                {
                    var chars = new char[length];
                    for (int k = 0; k < length; k++)
                    {
                        if (der[at + k] > 0x7e || der[at + k] < 0x21) return false;  // IA5, no spaces
                        chars[k] = (char)der[at + k];
                    }
                    dns.Add(new string(chars));
                }
                else if (tag == 0x87)
                {
                    var bytes = new byte[length];
                    Array.Copy(der, at, bytes, 0, length);
                    addresses.Add(bytes);
                }
                at += length;
            }
            return true;
        }

        // One DER tag and length (short or long form, at most 4 length bytes), bounds-checked.
        static bool Header(byte[] der, ref int at, out int tag, out int length)
        {
            tag = length = 0;
            if (at + 2 > der.Length) return false;
            tag = der[at++];
            int first = der[at++];
            if (first < 0x80) length = first;
            else
            {
                int count = first & 0x7f;
                if (count == 0 || count > 4 || at + count > der.Length) return false;
                long value = 0;
                for (int k = 0; k < count; k++) value = (value << 8) | der[at++];
                if (value > int.MaxValue) return false;
                length = (int)value;
            }
            return length <= der.Length - at;
        }

        static bool Equal(byte[] a, byte[] b)
        {
            if (a.Length != b.Length) return false;
            for (int k = 0; k < a.Length; k++)
                if (a[k] != b[k]) return false;
            return true;
        }
    }
}
