// Leak (irregular steps): the combat log, a static List<CombatEvent> (combatLog) that Record
// appends every kill to and nothing ever trims. The kills per level follow 3, 11, 1, 7, 1 (then
// again), so the leak grows by uneven steps.
// Not a leak: the level's enemies (an array replaced at each level).
using System.Collections.Generic;

namespace LeakCorpus
{
    class CombatEvent
    {
        public int Level, Enemy;
        public string Weapon;
        public float[] Trajectory = new float[12];
    }

    class Enemy
    {
        public int Hp;
    }

    static class IrregularSteps
    {
        static List<CombatEvent> combatLog = new List<CombatEvent>(); // the leak
        static Enemy[] enemies; // replaced every level

        static void Record(int level, int enemy)
        {
            combatLog.Add(new CombatEvent { Level = level, Enemy = enemy, Weapon = "plasma-" + Game.Rng.Next(9) });
        }

        static void SpawnWave()
        {
            enemies = new Enemy[40];
            for (int i = 0; i < enemies.Length; i++) enemies[i] = new Enemy { Hp = 10 + Game.Rng.Next(20) };
        }

        static int Main(string[] args)
        {
            int[] kills = { 3, 11, 1, 7, 1 };
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                SpawnWave();
                for (int k = 0; k < kills[n % 5]; k++)
                {
                    sum += Game.Play(n, 12);
                    Record(n, k);
                }
                sum += Game.Play(n, 60) + enemies[0].Hp;
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
