// Leak held by the finalizer queue: the first level drops a ShaderWatchdog whose finalizer waits
// until the asset loader has finished (Loader.Finished, set only when the game ends), so the
// finalizer thread blocks in it. Every level streams 4 StreamedTexture objects (2 KiB of pixels,
// a finalizer that counts releases) and drops them: they are unreachable, but their finalizers
// cannot run, so the queue of objects waiting for finalization keeps them all alive.
// Not a leak: the level's HUD strings (garbage, no finalizer).
using System;
using System.Threading;

namespace LeakCorpus
{
    static class Loader
    {
        public static readonly ManualResetEvent Finished = new ManualResetEvent(false);
        public static int Released;
    }

    class ShaderWatchdog
    {
        ~ShaderWatchdog() { Loader.Finished.WaitOne(); }
    }

    class StreamedTexture
    {
        public byte[] Pixels = new byte[2048];
        ~StreamedTexture() { Interlocked.Increment(ref Loader.Released); }
    }

    static class FinalizerQueue
    {
        static void StartWatchdog() { new ShaderWatchdog(); }

        static long Stream(int level, int i)
        {
            var t = new StreamedTexture();
            t.Pixels[i] = (byte)level;
            return t.Pixels[i];
        }

        static int Main(string[] args)
        {
            long sum = 0;
            StartWatchdog();
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                for (int i = 0; i < 4; i++) sum += Stream(n, i) + Game.Play(n, 30);
                sum += Game.Finish(n);
            }
            Loader.Finished.Set(); // back to the main menu: the finalizers run
            return sum == 0 ? 1 : 0;
        }
    }
}
