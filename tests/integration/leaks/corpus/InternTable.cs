// Leak (string intern table): LocalizeEnemyName builds each enemy's display name and interns it
// with string.Intern, "to save memory". The names are new at every level ("grunt-3-7 of the red
// squad"), so the runtime's intern table gains 12 strings a level and never lets them go.
// Not a leak: the weapon names interned at every level again (found, not added).
using System;

namespace LeakCorpus
{
    static class InternTable
    {
        static readonly string[] weapons = { "rifle", "shotgun", "rocket", "knife" };

        static string LocalizeEnemyName(int level, int i)
        {
            string name = "grunt-" + level + "-" + i + " of the " + (i % 2 == 1 ? "red" : "blue") + " squad";
            return string.Intern(name); // the leak
        }

        static int Main(string[] args)
        {
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                for (int i = 0; i < 12; i++)
                {
                    string label = LocalizeEnemyName(n, i);
                    string weapon = string.Intern(new string(weapons[i % 4].ToCharArray()));
                    sum += label.Length + weapon.Length + Game.Play(n, 10);
                }
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
