// Leak (dictionary keyed by level): statistics per level in a static Dictionary<int, LevelStats>
// (statsByLevel) that each level adds its entry to (with a 1 KiB heat map) and nothing removes.
// Not a leak: the pickups collected this level, a Dictionary<string, int> cleared at each
// level_start.
using System.Collections.Generic;

namespace LeakCorpus
{
    class LevelStats
    {
        public int Kills;
        public byte[] HeatMap = new byte[1024];
    }

    static class DictByLevel
    {
        static Dictionary<int, LevelStats> statsByLevel = new Dictionary<int, LevelStats>(); // the leak
        static Dictionary<string, int> pickups = new Dictionary<string, int>();

        static LevelStats StatsFor(int level)
        {
            LevelStats s;
            if (!statsByLevel.TryGetValue(level, out s)) statsByLevel[level] = s = new LevelStats();
            return s;
        }

        static int Main(string[] args)
        {
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                pickups.Clear();
                for (int i = 0; i < 10; i++)
                {
                    var stats = StatsFor(n);
                    stats.Kills += Game.Rng.Next(3);
                    stats.HeatMap[Game.Rng.Next(1024)]++;
                    string item = "pickup-" + (i % 4);
                    int count;
                    pickups.TryGetValue(item, out count);
                    pickups[item] = count + 1;
                    sum += Game.Play(n, 12);
                }
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
