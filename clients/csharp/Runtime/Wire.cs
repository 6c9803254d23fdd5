// Reading fields of decoded frames leniently: a field that is missing or of another type reads
// as its default, as docs/protocol.md asks of clients (unknown fields ignored, nil = absent).
using System;
using System.Collections.Generic;
using System.Globalization;

namespace Turnloom
{
    /// <summary>Typed reads of the maps the codec decodes.</summary>
    public static class Wire
    {
        static readonly List<object> NoItems = new List<object>();

        /// <summary>The field's value, or null when absent.</summary>
        public static object Get(Dictionary<string, object> m, string key) =>
            m != null && m.TryGetValue(key, out var v) ? v : null;

        /// <summary>The field as a string, or <paramref name="otherwise"/>.</summary>
        public static string Str(Dictionary<string, object> m, string key, string otherwise = "") =>
            Get(m, key) is string s ? s : otherwise;

        /// <summary>The field as an integer, or 0.</summary>
        public static long Long(Dictionary<string, object> m, string key) =>
            Get(m, key) is long l ? l : 0;

        /// <summary>The field as a bool, or false.</summary>
        public static bool Bool(Dictionary<string, object> m, string key) =>
            Get(m, key) is bool b && b;

        /// <summary>The field as a number (an int, a float32 or a float64), or 0.</summary>
        public static double Double(Dictionary<string, object> m, string key)
        {
            object v = Get(m, key);
            if (v is double d) return d;
            if (v is float f) return f;
            if (v is long l) return l;
            return 0;
        }

        /// <summary>The field as a map, or null.</summary>
        public static Dictionary<string, object> Map(Dictionary<string, object> m, string key) =>
            Get(m, key) as Dictionary<string, object>;

        /// <summary>The field as a list (empty when absent).</summary>
        public static List<object> List(Dictionary<string, object> m, string key) =>
            Get(m, key) as List<object> ?? NoItems;

        /// <summary>The field as a list of strings (other items left out).</summary>
        public static List<string> Strings(Dictionary<string, object> m, string key)
        {
            var list = new List<string>();
            foreach (var item in List(m, key))
                if (item is string s) list.Add(s);
            return list;
        }

        /// <summary>A decoded scalar as text: strings as they are, bools as true/false, numbers in
        /// the invariant culture.</summary>
        public static string Text(object value)
        {
            if (value == null) return "";
            if (value is string s) return s;
            if (value is bool b) return b ? "true" : "false";
            if (value is IFormattable f) return f.ToString(null, CultureInfo.InvariantCulture);
            return value.ToString();
        }
    }
}
