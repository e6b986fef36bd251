// The scored leak corpus's common part for the C# programs on mono-boehm: a game of levels, each
// between HeapMan.Event("level_start") and HeapMan.Event("level_end") and followed by a short
// results screen. Every frame makes garbage (particles, HUD text, path-finding scratch), about
// half a megabyte a level, so the collector runs several times a level on its own. Nothing here
// calls GC.Collect(): the collection that `heaprec run --ram-dumps event:level_end` dumps falls
// wherever the allocation volume puts it, as in a real game.
//
// Deterministic: one Random with a fixed seed, no clocks. Each program prints nothing;
// `mono-boehm PROG.exe [levels]` (default 10). What each program leaks (or does not) is said at
// its top and in manifest.txt, which tests/integration/leaks/score_corpus.py scores against.
using System;

namespace LeakCorpus
{
    public class Particle
    {
        public float X, Y, VX, VY;
        public Particle Next;
    }

    public static class Game
    {
        public static readonly Random Rng = new Random(20240611);

        public static int Levels(string[] args) { return args.Length > 0 ? int.Parse(args[0]) : 10; }

        // One frame's garbage: a particle burst (a linked list), a HUD line, path-finding scratch.
        static long FrameGarbage(int level, int frame)
        {
            Particle burst = null;
            int n = 8 + Rng.Next(16);
            for (int i = 0; i < n; i++) burst = new Particle { X = i, VY = frame, Next = burst };
            string hud = "level " + level + " frame " + frame + " score " + Rng.Next(100000);
            var scratch = new byte[1024 + Rng.Next(4096)];
            scratch[scratch.Length / 2] = (byte)frame;
            long sum = hud.Length + scratch[scratch.Length / 2];
            for (var p = burst; p != null; p = p.Next) sum += (long)p.X;
            return sum;
        }

        // `frames` frames of play, each with its garbage and a frame mark.
        public static long Play(int level, int frames)
        {
            long sum = 0;
            for (int f = 0; f < frames; f++)
            {
                sum += FrameGarbage(level, f);
                HeapMan.Frame();
            }
            return sum;
        }

        public static void Begin(int level) { HeapMan.Event("level_start"); }

        // level_end, then the results screen (its garbage too).
        public static long Finish(int level)
        {
            HeapMan.Event("level_end");
            return Play(level, 20 + Rng.Next(20));
        }
    }
}
