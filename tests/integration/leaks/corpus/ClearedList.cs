// Not a leak (lists cleared each level): the live projectiles (a static List<Projectile>) and
// the level's 8-15 spawn points by name (a Dictionary<string, SpawnPoint>) fill up during a level
// and are cleared at its end, before level_end.
using System.Collections.Generic;

namespace LeakCorpus
{
    class Projectile
    {
        public float VX;
        public byte[] Trail = new byte[256];
    }

    class SpawnPoint
    {
        public float X;
        public string Tag;
    }

    static class ClearedList
    {
        static List<Projectile> projectiles = new List<Projectile>();
        static Dictionary<string, SpawnPoint> spawns = new Dictionary<string, SpawnPoint>();

        static int Main(string[] args)
        {
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                int count = 8 + Game.Rng.Next(8);
                for (int i = 0; i < count; i++)
                    spawns["spawn-" + i] = new SpawnPoint { X = i, Tag = "level " + n };
                for (int wave = 0; wave < 6; wave++)
                {
                    for (int i = 0; i < 10 + Game.Rng.Next(20); i++)
                        projectiles.Add(new Projectile { VX = i });
                    sum += Game.Play(n, 20) + projectiles.Count + spawns.Count;
                }
                projectiles.Clear();
                spawns.Clear();
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
