// Leak held by closures: the running total score is a delegate (static totalScore) rebuilt at
// each level as a lambda that captures the previous delegate and the level's LevelResult (with a
// 1 KiB replay summary): a linked list made of closures, one link a level, never collapsed.
// Not a leak: the per-frame lambdas that sort the level's enemies (garbage at once).
using System;
using System.Collections.Generic;

namespace LeakCorpus
{
    class LevelResult
    {
        public int Score;
        public byte[] Summary = new byte[1024];
    }

    static class ClosureChain
    {
        static Func<long> totalScore = () => 0; // the leak

        static void AddLevel(LevelResult result)
        {
            var previous = totalScore;
            totalScore = () => previous() + result.Score;
        }

        static int Main(string[] args)
        {
            long sum = 0;
            var enemies = new List<int>();
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                for (int i = 0; i < 6; i++)
                {
                    enemies.Clear();
                    for (int e = 0; e < 20; e++) enemies.Add(Game.Rng.Next(100));
                    int pivot = n;
                    enemies.Sort((a, b) => Math.Abs(a - pivot).CompareTo(Math.Abs(b - pivot)));
                    sum += Game.Play(n, 20) + enemies[0];
                }
                AddLevel(new LevelResult { Score = (int)(sum & 0xffff) });
                sum += Game.Finish(n) + totalScore();
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
