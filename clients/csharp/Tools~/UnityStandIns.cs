// Stand-ins for the few UnityEngine types the components and the sample use, with Unity's
// signatures, so `make csharp` can check that those files compile with UNITY_5_3_OR_NEWER
// defined, and run the components' tests (Tests/Unity/) without Unity: the events call their
// listeners, everything else does nothing. Never shipped: Unity compiles the components
// against the real UnityEngine.
using System;

namespace UnityEngine
{
    public class Object
    {
        public static void DontDestroyOnLoad(Object target) { }
    }

    public class GameObject : Object { }

    public class Component : Object
    {
        public GameObject gameObject => null;
        public T GetComponent<T>() => default(T);
    }

    public class Behaviour : Component
    {
        public bool enabled;
    }

    public class MonoBehaviour : Behaviour { }

    public static class Debug
    {
        public static void Log(object message) { }
        public static void LogWarning(object message) { }
        public static void LogException(Exception exception) { }
    }

    public static class Application
    {
        public static string productName => "";
    }

    public sealed class RequireComponent : Attribute
    {
        public RequireComponent(Type type) { }
    }

    public sealed class AddComponentMenu : Attribute
    {
        public AddComponentMenu(string menuName) { }
    }

    public sealed class TooltipAttribute : Attribute
    {
        public TooltipAttribute(string tooltip) { }
    }

    public sealed class TextAreaAttribute : Attribute { }

    public sealed class SerializeField : Attribute { }
}

namespace UnityEngine.Events
{
    using System.Collections.Generic;

    public delegate void UnityAction();
    public delegate void UnityAction<T0>(T0 arg0);
    public delegate void UnityAction<T0, T1>(T0 arg0, T1 arg1);

    // The listeners are kept and called in the order they were added, as Unity's are, so the
    // tests of the components can listen to them.
    public class UnityEvent
    {
        readonly List<UnityAction> calls = new List<UnityAction>();
        public void AddListener(UnityAction call) => calls.Add(call);
        public void RemoveListener(UnityAction call) => calls.Remove(call);
        public void RemoveAllListeners() => calls.Clear();
        public void Invoke() { foreach (var call in calls.ToArray()) call(); }
    }

    public class UnityEvent<T0>
    {
        readonly List<UnityAction<T0>> calls = new List<UnityAction<T0>>();
        public void AddListener(UnityAction<T0> call) => calls.Add(call);
        public void RemoveListener(UnityAction<T0> call) => calls.Remove(call);
        public void RemoveAllListeners() => calls.Clear();
        public void Invoke(T0 arg0) { foreach (var call in calls.ToArray()) call(arg0); }
    }

    public class UnityEvent<T0, T1>
    {
        readonly List<UnityAction<T0, T1>> calls = new List<UnityAction<T0, T1>>();
        public void AddListener(UnityAction<T0, T1> call) => calls.Add(call);
        public void RemoveListener(UnityAction<T0, T1> call) => calls.Remove(call);
        public void RemoveAllListeners() => calls.Clear();
        public void Invoke(T0 arg0, T1 arg1) { foreach (var call in calls.ToArray()) call(arg0, arg1); }
    }
}
