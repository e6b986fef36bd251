// Leak held by GC handles: each level registers an audio callback with the (simulated) native
// audio engine, passing it a GCHandle to its AudioCallbackState (a 1 KiB mix buffer and the
// level's name) as user data. The engine never calls back to unregister, so GCHandle.Free is
// never called: one normal handle a level keeps its state alive, and nothing else does.
// Not a leak: the level's mixer scratch buffers (garbage at once).
using System;
using System.Runtime.InteropServices;

namespace LeakCorpus
{
    class AudioCallbackState
    {
        public string LevelName;
        public float[] Mix = new float[256];
    }

    static class NativeAudio
    {
        static long registered;

        // Stands in for a C API that stores `userData` in native memory.
        public static void RegisterCallback(IntPtr userData) { registered += userData.ToInt64() & 1; }
    }

    static class GcHandle
    {
        static void StartMusic(int level)
        {
            var state = new AudioCallbackState { LevelName = "level-" + level + "-theme" };
            NativeAudio.RegisterCallback(GCHandle.ToIntPtr(GCHandle.Alloc(state))); // the leak
        }

        static int Main(string[] args)
        {
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                StartMusic(n);
                for (int i = 0; i < 6; i++)
                {
                    var scratch = new float[512];
                    scratch[i] = i;
                    sum += Game.Play(n, 20) + (long)scratch[i];
                }
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
