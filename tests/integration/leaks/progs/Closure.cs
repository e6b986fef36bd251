// Leak: deferred callbacks, each a lambda capturing its level, queued and never run (closure
// capturing a level).
// Not a leak: a list of recent levels' logs grown at each level and cleared every third.
using System;
using System.Collections.Generic;

namespace Corpus
{
    static class Closure
    {
        static List<Func<int>> deferred = new List<Func<int>>();
        static List<byte[]> recent = new List<byte[]>();

        static void DeferStats(Level level) { deferred.Add(() => level.Score); }

        static void LogLevel(int n)
        {
            if (recent.Count == 3) recent.Clear();
            recent.Add(new byte[4096]);
        }

        static int Main(string[] args)
        {
            int sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                HeapMan.Event("level_start");
                var level = new Level(n);
                DeferStats(level);
                LogLevel(n);
                sum += Game.PlayFrames(level);
                Game.EndLevel();
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
