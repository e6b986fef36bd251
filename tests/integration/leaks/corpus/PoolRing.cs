// Not a leak (a pool and a ring buffer): 96 bullets made at start-up in a Stack<Bullet> pool,
// taken and given back at every level (40-90 shots a level); and the console's last 16 lines in
// a ring (a string[16] overwritten in place). Both stay the same size from the first level on.
using System.Collections.Generic;

namespace LeakCorpus
{
    class Bullet
    {
        public int Damage;
    }

    static class PoolRing
    {
        static Stack<Bullet> pool = new Stack<Bullet>();
        static string[] console = new string[16];
        static int consoleNext;

        static void Print(string line)
        {
            console[consoleNext] = line;
            consoleNext = (consoleNext + 1) % console.Length;
        }

        static int Main(string[] args)
        {
            for (int i = 0; i < 96; i++) pool.Push(new Bullet());
            var flying = new List<Bullet>();
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                int shots = 40 + Game.Rng.Next(51);
                for (int s = 0; s < shots; s += 8)
                {
                    for (int i = 0; i < 8; i++)
                    {
                        var b = pool.Pop();
                        b.Damage = n;
                        flying.Add(b);
                    }
                    sum += Game.Play(n, 3);
                    foreach (var b in flying) pool.Push(b);
                    flying.Clear();
                    Print("level " + n + ": " + s + " shots");
                }
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
