// The leak corpus's common part for the C# programs (mono-boehm): a level with its enemies,
// played between HeapMan.Event("level_start") and ("level_end"), and a collection right after
// each level_end so that `heaprec run --ram-dumps event:level_end` dumps the heap there.
// Each program plants leaks and non-leaks of one kind (tests/integration/leaks/leaks_test.cpp
// says which); `mono-boehm PROG.exe [levels]` (default 6).
using System;
using System.Collections.Generic;

namespace Corpus
{
    public class Enemy
    {
        public float X, Y;
        public string Name;
        public Enemy(int level, int i) { Name = "enemy-" + level + "-" + i; X = i; }
    }

    public class Level
    {
        public int Number, Score;
        public List<Enemy> Enemies = new List<Enemy>();
        public Level(int number)
        {
            Number = number;
            for (int i = 0; i < 50; i++) Enemies.Add(new Enemy(number, i));
        }
        public void OnScore(int score) { if (score > Score) Score = score; }
    }

    public static class Game
    {
        public static int Levels(string[] args) { return args.Length > 0 ? int.Parse(args[0]) : 6; }

        // Frames: per-frame garbage the collector cleans.
        public static int PlayFrames(Level level)
        {
            int sum = 0;
            for (int f = 0; f < 100; f++)
            {
                string hud = "level " + level.Number + " frame " + f;
                sum += hud.Length;
                level.Enemies[f % level.Enemies.Count].X += 1;
            }
            level.Score += sum;
            return sum;
        }

        public static void EndLevel()
        {
            HeapMan.Event("level_end");
            GC.Collect();
        }
    }
}
