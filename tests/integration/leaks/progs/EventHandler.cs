// Leak: each level subscribes its score handler to a static event and never removes it (event
// handler never removed).
// Leak: a static index of levels by name that nothing removes from (cache keyed by level).
// Not a leak: a bullet pool whose bullets are taken and given back at every level.
using System;
using System.Collections.Generic;

namespace Corpus
{
    class Bullet
    {
        public float X;
        public byte[] State = new byte[64];
    }

    static class EventHandler
    {
        static event Action<int> ScoreChanged;
        static Stack<Bullet> pool = new Stack<Bullet>();
        static Dictionary<string, Level> byName = new Dictionary<string, Level>();

        static void Subscribe(Level level) { ScoreChanged += level.OnScore; }

        static void Index(int n) { byName["level-" + n] = new Level(n); }

        static int Main(string[] args)
        {
            for (int i = 0; i < 32; i++) pool.Push(new Bullet());
            int sum = 0;
            var taken = new List<Bullet>();
            for (int n = 0; n < Game.Levels(args); n++)
            {
                HeapMan.Event("level_start");
                var level = new Level(n);
                Subscribe(level);
                Index(n);
                for (int i = 0; i < 20; i++) { var b = pool.Pop(); b.X = i; taken.Add(b); }
                sum += Game.PlayFrames(level);
                ScoreChanged(sum);
                foreach (var b in taken) pool.Push(b);
                taken.Clear();
                Game.EndLevel();
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
