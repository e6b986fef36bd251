// Leak: a static list that remembers every level (static list).
// Not a leak: a tile cache that fills up over the first three levels, then stays flat.
using System.Collections.Generic;

namespace Corpus
{
    static class StaticList
    {
        static List<Level> history = new List<Level>();
        static Dictionary<int, byte[]> tiles = new Dictionary<int, byte[]>();

        static void Remember(Level level) { history.Add(level); }

        static byte[] LoadTile(int level)
        {
            int key = level < 3 ? level : 2;
            byte[] t;
            if (!tiles.TryGetValue(key, out t)) tiles[key] = t = new byte[4096];
            return t;
        }

        static int Main(string[] args)
        {
            int sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                HeapMan.Event("level_start");
                var level = new Level(n);
                sum += Game.PlayFrames(level) + LoadTile(n).Length;
                Remember(level);
                Game.EndLevel();
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
