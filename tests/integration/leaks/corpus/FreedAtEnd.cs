// Not a leak (growth freed at the end): the session recorder keeps every input sample of the
// whole game (a static List<InputSample>, 40 a level, 64 bytes of axes each) to save a replay
// file when the game is over; after the last level it saves the replay and drops the list. It
// grows at every level, but the program frees it before it exits.
using System.Collections.Generic;

namespace LeakCorpus
{
    class InputSample
    {
        public int Frame;
        public float[] Axes = new float[16];
    }

    static class FreedAtEnd
    {
        static List<InputSample> session = new List<InputSample>();

        static long SaveReplay()
        {
            long bytes = 0;
            foreach (var s in session) bytes += s.Axes.Length * 4;
            session = null; // saved: the recording is gone
            return bytes;
        }

        static int Main(string[] args)
        {
            long sum = 0;
            int levels = Game.Levels(args);
            for (int n = 0; n < levels; n++)
            {
                Game.Begin(n);
                for (int i = 0; i < 40; i++)
                {
                    session.Add(new InputSample { Frame = n * 100 + i });
                    if (i % 8 == 0) sum += Game.Play(n, 24);
                }
                if (n == levels - 1) sum += SaveReplay(); // game over
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
