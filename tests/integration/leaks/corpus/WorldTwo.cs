// Two leaks under one holder: the World (static world) keeps
//   - Corpses: a List<Corpse> that DropCorpse adds 2 corpses to each level (each with a 512-byte
//     ragdoll pose), never removed;
//   - Holes: a List<BulletHole> that Shoot adds 5 bullet holes to each level, never removed.
// Not a leak: the World's sound bank, 8 clips loaded at start-up and never changed.
using System.Collections.Generic;

namespace LeakCorpus
{
    class Corpse
    {
        public int Level;
        public float[] Pose = new float[128];
    }

    class BulletHole
    {
        public float X;
        public string Texture;
    }

    class World
    {
        public List<Corpse> Corpses = new List<Corpse>();       // leak 1
        public List<BulletHole> Holes = new List<BulletHole>(); // leak 2
        public byte[][] Sounds = new byte[8][];

        public World() { for (int i = 0; i < Sounds.Length; i++) Sounds[i] = new byte[2048]; }

        public void DropCorpse(int level) { Corpses.Add(new Corpse { Level = level }); }

        public void Shoot(int level)
        {
            Holes.Add(new BulletHole { X = Game.Rng.Next(1000), Texture = "scorch-" + level });
        }
    }

    static class WorldTwo
    {
        static World world = new World();

        static int Main(string[] args)
        {
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                for (int wave = 0; wave < 5; wave++)
                {
                    sum += Game.Play(n, 20) + world.Sounds[wave].Length;
                    world.Shoot(n);
                    if (wave % 2 == 1) world.DropCorpse(n);
                }
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
