// Leak held by an event of a long-lived object: the InputManager (one for the whole game, in the
// static field input) raises KeyPressed; every level builds a PauseMenu (a 1 KiB layout and its
// item labels) that subscribes menu.OnKey and never unsubscribes, so the event's invocation list
// keeps every level's menu alive.
// Not a leak: the level's HUD, replaced at every level.
using System;

namespace LeakCorpus
{
    class InputManager
    {
        public event Action<int> KeyPressed;

        public void Press(int key)
        {
            var handlers = KeyPressed;
            if (handlers != null) handlers(key);
        }
    }

    class PauseMenu
    {
        byte[] layout = new byte[1024];
        string[] items;
        public int Selected;

        public PauseMenu(int level)
        {
            items = new[] { "Resume", "Restart level " + level, "Options", "Quit" };
            layout[0] = (byte)level;
        }

        public void OnKey(int key) { Selected = (Selected + key) % items.Length; }
    }

    class Hud
    {
        public string[] Lines = new string[8];
    }

    static class EventSubscriber
    {
        static InputManager input = new InputManager();
        static Hud hud;

        static int Main(string[] args)
        {
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                hud = new Hud();
                var menu = new PauseMenu(n);
                input.KeyPressed += menu.OnKey; // the leak: never -=
                for (int i = 0; i < 6; i++)
                {
                    input.Press(i);
                    hud.Lines[i] = "wave " + i;
                    sum += Game.Play(n, 20) + menu.Selected;
                }
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
