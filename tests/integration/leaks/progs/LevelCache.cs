// Leak: a cache keyed by level number whose entries are never evicted (cache keyed by level).
// Not a leak: a ring buffer of the last 8 messages.
using System.Collections.Generic;

namespace Corpus
{
    class LevelAssets
    {
        public Level Level;
        public byte[] Pixels = new byte[8192];
        public LevelAssets(Level level) { Level = level; }
    }

    static class LevelCache
    {
        static Dictionary<int, LevelAssets> assets = new Dictionary<int, LevelAssets>();
        static string[] ring = new string[8];
        static int next;

        static void Put(int key, Level level) { assets[key] = new LevelAssets(level); }

        static void Log(int level, int i) { ring[next++ % 8] = new string('m', 256) + level + i; }

        static int Main(string[] args)
        {
            int sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                HeapMan.Event("level_start");
                var level = new Level(n);
                Put(n, level);
                for (int i = 0; i < 8; i++) Log(n, i);
                sum += Game.PlayFrames(level);
                Game.EndLevel();
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
