// Ground truth for the Mono layer (mono_test.cpp), printed by the program itself:
//
//   truth THREADS PER_THREAD ROUNDS   probes (Probe[] arrays, addresses known through `fixed`),
//                                     each watched by a long WeakReference (cleared exactly when
//                                     the collector frees the object, finalizable or not); lines
//                                     "probe ADDRESS LO HI" (died in a GC numbered in (LO, HI])
//                                     or "probe ADDRESS alive"
//   classes                           exact numbers of objects of the program's own classes:
//                                     lines "class NAME COUNT"
//   stacks                            allocations of Leaf under Chain.A -> B -> C, after an
//                                     exception unwound through other frames: "leaves COUNT"
//   events                            HeapMan events and frames in a known order
//   threads N                         N short-lived threads one after another, each allocating
//                                     through a call chain: "threads N vm K" (K: the process's
//                                     VmSize in kB at the end)
//   layouts                           one object of each class of known layout (explicit field
//                                     offsets, structs in objects and arrays, a base class,
//                                     generics), kept alive to the end: "layouts N"
//   dump N                            N Probe[16] arrays kept alive, element j of array i holding
//                                     i * 16 + j: lines "object ADDRESS I"; then a collection
//   finalize N                        N Finalizable objects, each holding a Probe[8], dropped; a
//                                     collection queues them for their finalizers (lines
//                                     "payload ADDRESS", then "gc K"); the finalizers run and a
//                                     second collection frees them: "gc2 K", "finalized N"
//   stackheld                         a Probe[4] held only by the main thread's stack, another
//                                     only by a worker's (blocked); a third thread collects:
//                                     "main ADDRESS", "worker ADDRESS", "gc K"
//
// Build: mcs -unsafe MonoTruth.cs HeapMan.cs
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Truth
{
    struct Probe
    {
        public int V;
    }

    // Finalizable probes' owner: its finalizer runs after the collection that found it dead,
    // and the collector frees it (and its probe array) only at a later one.
    class Finalizable
    {
        public static int Finalized;
        public Probe[] Payload;
        ~Finalizable() { Interlocked.Increment(ref Finalized); }
    }

    class Alpha { public int A; }
    class Outer { public class Inner { public long B; } }
    class Box<T> { public T Value; }

    class Leaf { public int L; }

    // Layouts the test knows (Mono 6.8, 64-bit: fields after the 16-byte object header; an
    // explicit FieldOffset counts from there).
    [StructLayout(LayoutKind.Explicit)]
    class ExplicitRefs
    {
        [FieldOffset(0)] public object A;
        [FieldOffset(8)] public long N;
        [FieldOffset(16)] public string B;
        [FieldOffset(24)] public int I;
    }
    [StructLayout(LayoutKind.Explicit)]
    struct RefPair
    {
        [FieldOffset(0)] public long X;
        [FieldOffset(8)] public object R;
    }
    [StructLayout(LayoutKind.Explicit)]
    class WithStruct
    {
        [FieldOffset(0)] public int K;
        [FieldOffset(8)] public RefPair P;
        [FieldOffset(24)] public object Q;
    }
#pragma warning disable 649  // fields only laid out, never read or written
    class PlainData { public int A; public long B; public double C; }
    class BaseRefs { public object R1; public int X; }
#pragma warning restore 649
    class DerivedRefs : BaseRefs { public object R2; public static object Shared; }
    enum Colour { Red, Green }

    static class Chain
    {
        public static List<Leaf> Kept = new List<Leaf>();

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void A(int n) { B(n); }
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void B(int n) { C(n); }
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void C(int n)
        {
            for (int i = 0; i < n; i++) Kept.Add(new Leaf { L = i });
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Thrower(int depth)
        {
            if (depth == 0) throw new InvalidOperationException("unwind");
            Thrower(depth - 1);
        }
    }

    unsafe static class Program
    {
        static readonly object Lock = new object();
        static readonly List<ulong> Addresses = new List<ulong>();
        static readonly List<WeakReference> Refs = new List<WeakReference>();
        static readonly List<int> Lo = new List<int>();   // GC count before the scan that last saw it alive
        static readonly List<int> Hi = new List<int>();   // -1: alive so far

        static ulong AddressOf(Probe[] a)
        {
            fixed (Probe* p = a) return (ulong)p - 32;  // MonoArray: vtable, sync, bounds, length
        }

        static void Register(Probe[] p)
        {
            var w = new WeakReference(p, true);
            ulong address = AddressOf(p);
            lock (Lock)
            {
                Addresses.Add(address);
                Refs.Add(w);
                Lo.Add(GC.CollectionCount(0));
                Hi.Add(-1);
            }
        }

        // Marks probes found dead: each died in a GC after the count read before the scan that
        // last saw it alive, and at or before the count read after this scan.
        static void Scan()
        {
            lock (Lock)
            {
                int before = GC.CollectionCount(0);
                var dead = new List<int>();
                for (int i = 0; i < Refs.Count; i++)
                {
                    if (Hi[i] >= 0) continue;
                    if (Refs[i].IsAlive) Lo[i] = before; else dead.Add(i);
                }
                int after = GC.CollectionCount(0);
                foreach (int i in dead) Hi[i] = after;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Worker(int id, int perThread, int rounds, List<object> keep)
        {
            var rnd = new Random(id * 7919 + 1);
            for (int r = 0; r < rounds; r++)
            {
                for (int i = 0; i < perThread; i++)
                {
                    var p = new Probe[1 + rnd.Next(40)];
                    Register(p);
                    int fate = rnd.Next(10);
                    if (fate == 0) keep.Add(p);                                  // survives
                    else if (fate == 1) keep.Add(new Finalizable { Payload = p }); // dies later
                    else if (fate == 2) new Finalizable { Payload = p };         // finalizable garbage
                }
                // Drop some of what was kept: it dies in a later collection.
                if (keep.Count > 8) keep.RemoveRange(0, keep.Count / 3);
            }
        }

        static void Truth(int threads, int perThread, int rounds)
        {
            var keeps = new List<object>[threads];
            var workers = new Thread[threads];
            for (int t = 0; t < threads; t++)
            {
                int id = t;
                keeps[t] = new List<object>();
                workers[t] = new Thread(() => Worker(id, perThread, rounds, keeps[id]));
            }
            foreach (Thread w in workers) w.Start();
            bool running = true;
            while (running)
            {
                running = false;
                foreach (Thread w in workers) running |= w.IsAlive;
                GC.Collect();
                Scan();
                Thread.Sleep(1);
            }
            foreach (Thread w in workers) w.Join();
            for (int i = 0; i < 3; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
                Scan();
            }
            GC.KeepAlive(keeps);
            // Finalizers that ran so far; the event marks the moment in the log.
            Console.WriteLine("finalized " + Thread.VolatileRead(ref Finalizable.Finalized));
            HeapMan.Event("finalized");
            lock (Lock)
            {
                for (int i = 0; i < Addresses.Count; i++)
                    Console.WriteLine(Hi[i] < 0 ? "probe 0x" + Addresses[i].ToString("x") + " alive"
                                                : "probe 0x" + Addresses[i].ToString("x") + " " + Lo[i] + " " + Hi[i]);
            }
        }

        static void Classes()
        {
            var keep = new List<object>();
            for (int i = 0; i < 1000; i++) keep.Add(new Alpha { A = i });
            for (int i = 0; i < 300; i++) keep.Add(new Outer.Inner { B = i });
            for (int i = 0; i < 200; i++) keep.Add(new Box<Alpha> { Value = null });
            for (int i = 0; i < 100; i++) keep.Add(new Box<List<Alpha>>());
            Console.WriteLine("class Truth.Alpha 1000");
            Console.WriteLine("class Truth.Outer.Inner 300");
            Console.WriteLine("class Truth.Box<Truth.Alpha> 200");
            Console.WriteLine("class Truth.Box<System.Collections.Generic.List<Truth.Alpha>> 100");
            GC.KeepAlive(keep);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Stacks()
        {
            for (int i = 0; i < 5; i++)
            {
                try { Chain.Thrower(6); } catch (InvalidOperationException) { }
                Chain.A(100);
            }
            Console.WriteLine("leaves " + Chain.Kept.Count);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Events()
        {
            HeapMan.Event("first");
            HeapMan.Frame();
            HeapMan.Event("second", new byte[] { 1, 2, 3, 4 });
            HeapMan.Frame();
            HeapMan.Event("third");
            Console.WriteLine("events first second third frames 2");
        }

        static readonly List<Probe[]> Dumped = new List<Probe[]>();

        static void Dump(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var p = new Probe[16];
                for (int j = 0; j < 16; j++) p[j].V = i * 16 + j;
                Dumped.Add(p);
                Console.WriteLine("object 0x" + AddressOf(p).ToString("x") + " " + i);
            }
            GC.Collect();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int ThreadWork()
        {
            var list = new List<string>();
            for (int k = 0; k < 10; k++) list.Add("item " + k);
            return list.Count;
        }

        static void Threads(int n)
        {
            long sum = 0;
            for (int i = 0; i < n; i++)
            {
                var t = new Thread(() => Interlocked.Add(ref sum, ThreadWork()));
                t.Start();
                t.Join();
            }
            string vm = "?";
            foreach (string line in System.IO.File.ReadAllLines("/proc/self/status"))
                if (line.StartsWith("VmSize:")) vm = line.Substring(7).Trim().Split(' ')[0];
            Console.WriteLine("threads " + sum / 10 + " vm " + vm);
        }

        static List<object> layoutsKept = new List<object>();

        static void Layouts()
        {
            DerivedRefs.Shared = new object();
            layoutsKept.Add(new ExplicitRefs { A = new object(), B = "b" });
            layoutsKept.Add(new WithStruct { P = new RefPair { R = new object() }, Q = new object() });
            layoutsKept.Add(new PlainData());
            layoutsKept.Add(new DerivedRefs { R1 = new object(), R2 = new object() });
            layoutsKept.Add(new Box<string> { Value = "v" });
            layoutsKept.Add(new Box<int> { Value = 1 });
            layoutsKept.Add(new RefPair[3]);
            layoutsKept.Add(new object[3]);
            layoutsKept.Add(new int[3]);
            layoutsKept.Add(new Colour[3]);
            layoutsKept.Add(new ExplicitRefs[2, 2]);
            GC.Collect();
            Console.WriteLine("layouts " + layoutsKept.Count);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void DropFinalizable(int n)
        {
            for (int i = 0; i < n; i++)
            {
                var p = new Probe[8];
                new Finalizable { Payload = p };
                Console.WriteLine("payload 0x" + AddressOf(p).ToString("x"));
            }
        }

        static void FinalizeQueue(int n)
        {
            DropFinalizable(n);
            GC.Collect();
            Console.WriteLine("gc " + GC.CollectionCount(0));
            GC.WaitForPendingFinalizers();
            GC.Collect();
            Console.WriteLine("gc2 " + GC.CollectionCount(0));
            Console.WriteLine("finalized " + Thread.VolatileRead(ref Finalizable.Finalized));
        }

        // Each array lives only in a local of its thread's frame, while that thread waits: neither
        // thread is the one that collects.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void StackHeld()
        {
            var mine = new Probe[4];
            Console.WriteLine("main 0x" + AddressOf(mine).ToString("x"));
            var started = new ManualResetEvent(false);
            var go = new ManualResetEvent(false);
            var worker = new Thread(() =>
            {
                var its = new Probe[4];
                Console.WriteLine("worker 0x" + AddressOf(its).ToString("x"));
                started.Set();
                go.WaitOne();
                GC.KeepAlive(its);
            });
            worker.Start();
            started.WaitOne();
            var collector = new Thread(() => GC.Collect());
            collector.Start();
            collector.Join();
            Console.WriteLine("gc " + GC.CollectionCount(0));
            go.Set();
            worker.Join();
            GC.KeepAlive(mine);
        }

        static void Main(string[] args)
        {
            switch (args[0])
            {
                case "stackheld":
                    StackHeld();
                    break;
                case "finalize":
                    FinalizeQueue(int.Parse(args[1]));
                    break;
                case "layouts":
                    Layouts();
                    break;
                case "threads":
                    Threads(int.Parse(args[1]));
                    break;
                case "dump":
                    Dump(int.Parse(args[1]));
                    break;
                case "truth":
                    Truth(int.Parse(args[1]), int.Parse(args[2]), int.Parse(args[3]));
                    break;
                case "all":
                    Classes();
                    Stacks();
                    Events();
                    Truth(1, int.Parse(args[1]), int.Parse(args[2]));
                    break;
            }
        }
    }
}
