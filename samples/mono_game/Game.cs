// MonoGame: a small C# game loop for mono-boehm, for `heaprec run` to record. Read it in five
// minutes:
//
//   - levels: HeapMan.Event("level_start") / ("level_end") bracket each level;
//   - frames: HeapMan.Frame() once per frame;
//   - entities: enemies and pickups (List<Enemy>, a nested Level.SpawnPoint, a Dictionary of
//     tags) spawned during a level and dropped at its end: the collector frees them;
//   - a leak: every level's HUD subscribes a handler to the static Game.ScoreChanged event and
//     never unsubscribes; the handler's closure keeps the whole level (its enemies) alive, so the
//     growth diff between levels shows it;
//   - per-frame temporary strings and arrays (the HUD text, a scratch float[]): churn;
//   - a finalizable type (NativeTexture) whose finalizer releases a pretend native handle;
//   - an audio thread mixing sound buffers into a small ring.
//
//   mono-boehm MonoGame.exe [levels] [frames-per-level]
using System;
using System.Collections.Generic;
using System.Threading;

namespace Game
{
    class Transform
    {
        public float X, Y, Angle;
    }

    class Enemy
    {
        public string Name;
        public Transform Transform = new Transform();
        public int Health = 100;
        public Dictionary<string, int> Tags;
    }

    class Pickup
    {
        public Transform Transform = new Transform();
        public int Value;
    }

    // Stands for a GPU texture: its finalizer gives the native handle back.
    class NativeTexture
    {
        public static int Released;
        public readonly int Handle;
        public readonly byte[] Pixels;
        public NativeTexture(int handle, int bytes) { Handle = handle; Pixels = new byte[bytes]; }
        ~NativeTexture() { Interlocked.Increment(ref Released); }
    }

    class Level
    {
        public class SpawnPoint
        {
            public float X, Y;
            public SpawnPoint(float x, float y) { X = x; Y = y; }
        }

        public readonly int Number;
        public readonly List<Enemy> Enemies = new List<Enemy>();
        public readonly List<Pickup> Pickups = new List<Pickup>();
        public readonly List<SpawnPoint> SpawnPoints = new List<SpawnPoint>();
        public NativeTexture Background;
        public int Score;

        public Level(int number)
        {
            Number = number;
            for (int i = 0; i < 8; i++) SpawnPoints.Add(new SpawnPoint(i * 10f, number * 5f));
            Background = new NativeTexture(number, 64 * 1024);
        }

        public void SpawnEnemy(int frame)
        {
            SpawnPoint at = SpawnPoints[frame % SpawnPoints.Count];
            var e = new Enemy { Name = "enemy-" + Number + "-" + frame };
            e.Transform.X = at.X;
            e.Transform.Y = at.Y;
            e.Tags = new Dictionary<string, int> { { "wave", frame / 10 }, { "level", Number } };
            Enemies.Add(e);
        }

        public void SpawnPickup(int frame)
        {
            Pickups.Add(new Pickup { Value = frame % 7 });
        }

        // Enemies that lost their health leave the level: garbage for the next collection.
        public void Update(int frame)
        {
            foreach (Enemy e in Enemies)
            {
                e.Health -= (e.Name.Length + frame) % 13;
                e.Transform.Angle += 0.1f;
            }
            Score += Enemies.RemoveAll(e => e.Health <= 0);
        }
    }

    class Hud
    {
        // The per-frame text: a new string every frame (churn).
        public static string Text(Level level, int frame)
        {
            return "level " + level.Number + " frame " + frame + " score " + level.Score +
                   " enemies " + level.Enemies.Count;
        }
    }

    static class Audio
    {
        static volatile bool running = true;
        static float[][] ring = new float[4][];
        public static long Mixed;

        public static Thread Start()
        {
            var t = new Thread(() =>
            {
                int slot = 0;
                while (running)
                {
                    var buffer = new float[256];  // one mixed buffer, kept in a 4-slot ring
                    for (int i = 0; i < buffer.Length; i++) buffer[i] = (float)Math.Sin(i * 0.1);
                    ring[slot] = buffer;
                    slot = (slot + 1) % ring.Length;
                    Interlocked.Increment(ref Mixed);
                    Thread.Sleep(1);
                }
            });
            t.Name = "audio";
            t.Start();
            return t;
        }

        public static void Stop(Thread t)
        {
            running = false;
            t.Join();
        }
    }

    static class Program
    {
        // The leak: HUD handlers of every level stay subscribed.
        public static event Action<int> ScoreChanged;

        static int PlayLevel(int number, int frames)
        {
            HeapMan.Event("level_start");
            var level = new Level(number);
            ScoreChanged += score => level.Score = Math.Max(level.Score, score);
            int hudChars = 0;
            for (int frame = 0; frame < frames; frame++)
            {
                HeapMan.Frame();
                level.SpawnEnemy(frame);
                if (frame % 3 == 0) level.SpawnPickup(frame);
                level.Update(frame);
                hudChars += Hud.Text(level, frame).Length;
                var scratch = new float[64];  // per-frame scratch array (churn)
                scratch[frame % 64] = frame;
                ScoreChanged?.Invoke(level.Score);
            }
            // Games collect between levels: what survives this is what the level leaks.
            GC.Collect();
            HeapMan.Event("level_end");
            return hudChars;
        }

        static void Main(string[] args)
        {
            int levels = args.Length > 0 ? int.Parse(args[0]) : 4;
            int frames = args.Length > 1 ? int.Parse(args[1]) : 300;
            Thread audio = Audio.Start();
            long hud = 0;
            for (int level = 1; level <= levels; level++) hud += PlayLevel(level, frames);
            Audio.Stop(audio);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            Console.WriteLine("levels " + levels + ", frames " + (levels * frames) +
                              ", hud characters " + hud + ", leaked handlers " +
                              (ScoreChanged == null ? 0 : ScoreChanged.GetInvocationList().Length));
        }
    }
}
