// The Mono recorder benchmark's workload (bench/run_mono_bench.sh): allocation-heavy C#, timed
// inside the program (mono-boehm spends ~2 s at shutdown whatever runs it).
//
//   mono-boehm MonoBench.exe game N    N frames of a game-like update: every frame spawns
//                                      particles (a class with a nested Vector), a short-lived
//                                      message string and scratch array, keeps a ring of recent
//                                      particles alive, through a call chain 8 methods deep
//   mono-boehm MonoBench.exe tiny N    N allocations of a 32-byte object in a tight loop, the
//                                      worst case (nothing but allocation)
//
// Prints "work ms T allocs A gcs G" (A: the managed allocations the loop made, counted by hand;
// G: collections so far).
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Bench
{
    class Vector { public float X, Y, Z; }  // Z: padding to a game-sized vector

    class Particle
    {
        public Vector Position = new Vector();
        public Vector Velocity = new Vector();
        public int Age;
    }

    class Node { public int V; public Node Next; public Node(int v) { V = v; } }

    static class Game
    {
        static readonly Particle[] Ring = new Particle[50000];
        static int ringAt;
        public static long Allocs;
        public static long Checksum;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Particle Spawn(int frame, int i)
        {
            var p = new Particle { Age = frame };          // 3 objects: Particle + 2 Vectors
            p.Velocity.X = i * 0.5f;
            p.Position.Y = frame;
            p.Position.Z = -p.Position.Y;
            Allocs += 3;
            return p;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Emit(int frame, int count)
        {
            for (int i = 0; i < count; i++)
            {
                Particle p = Spawn(frame, i);
                Ring[ringAt] = p;
                ringAt = (ringAt + 1) % Ring.Length;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Hud(int frame)
        {
            string text = "frame " + frame;                   // Int32.ToString + Concat: 2 strings
            var scratch = new float[16];
            scratch[frame & 15] = text.Length;
            Checksum += (long)scratch[frame & 15];
            Allocs += 3;
        }

        [MethodImpl(MethodImplOptions.NoInlining)] static void Systems(int f) { Emit(f, 20); Hud(f); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void Update(int f) { Systems(f); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void Tick(int f) { Update(f); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void Frame(int f) { Tick(f); }
        [MethodImpl(MethodImplOptions.NoInlining)] static void Loop(int f) { Frame(f); }

        public static void Run(int frames)
        {
            for (int f = 0; f < frames; f++) Loop(f);
        }
    }

    static class Program
    {
        static void Main(string[] args)
        {
            string mode = args.Length > 0 ? args[0] : "game";
            int n = args.Length > 1 ? int.Parse(args[1]) : 100000;
            var sw = Stopwatch.StartNew();
            long allocs;
            if (mode == "tiny")
            {
                Node keep = null;
                long sum = 0;
                for (int i = 0; i < n; i++)
                {
                    var x = new Node(i);
                    sum += x.V;
                    if ((i & 1023) == 0) { x.Next = keep; keep = x; }
                }
                allocs = n;
                GC.KeepAlive(keep);
                Game.Checksum = sum;
            }
            else
            {
                Game.Run(n);
                allocs = Game.Allocs;
            }
            sw.Stop();
            Console.WriteLine("work ms " + sw.Elapsed.TotalMilliseconds.ToString("F1") + " allocs " + allocs +
                              " gcs " + GC.CollectionCount(0));
        }
    }
}
