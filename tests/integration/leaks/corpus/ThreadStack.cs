// Leak held only by a thread's stack: the AI worker thread's loop (WorkerLoop) keeps every path
// it planned in a local List<JobResult> (history), "for debugging", and never clears it. The
// main thread posts one job per level and waits for it; PlanPath makes each JobResult (with 768
// bytes of waypoints). Nothing but the worker's stack points to the list.
// Not a leak: the worker's per-job scratch grid (garbage at once).
using System.Collections.Generic;
using System.Threading;

namespace LeakCorpus
{
    class JobResult
    {
        public int Level, Length;
        public float[] Waypoints = new float[192];
    }

    static class ThreadStack
    {
        static readonly object gate = new object();
        static int job = -1; // the level to plan for; -1: none; -2: quit
        static int done;
        static long pathTotal;

        static JobResult PlanPath(int level)
        {
            var grid = new byte[16384]; // scratch
            grid[level] = (byte)level;
            return new JobResult { Level = level, Length = 64 + grid[level] };
        }

        static void WorkerLoop()
        {
            var history = new List<JobResult>(); // the leak: only this local holds it
            while (true)
            {
                int next;
                lock (gate)
                {
                    while (job == -1) Monitor.Wait(gate);
                    next = job;
                    job = -1;
                }
                if (next == -2) return;
                history.Add(PlanPath(next));
                long total = 0;
                foreach (var r in history) total += r.Length;
                lock (gate)
                {
                    pathTotal = total;
                    done++;
                    Monitor.PulseAll(gate);
                }
            }
        }

        static void Post(int next, int waitFor)
        {
            lock (gate)
            {
                job = next;
                Monitor.PulseAll(gate);
                while (done < waitFor) Monitor.Wait(gate);
            }
        }

        static int Main(string[] args)
        {
            var worker = new Thread(WorkerLoop);
            worker.Start();
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                sum += Game.Play(n, 60);
                Post(n, n + 1);
                sum += Game.Play(n, 60) + pathTotal;
                sum += Game.Finish(n);
            }
            Post(-2, 0);
            worker.Join();
            return sum == 0 ? 1 : 0;
        }
    }
}
