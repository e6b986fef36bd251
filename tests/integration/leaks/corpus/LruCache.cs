// Not a leak (bounded cache): a texture cache of at most 12 textures (4 KiB of pixels each) in
// least-recently-used order: a LinkedList<Texture> and a Dictionary<int, LinkedListNode<Texture>>
// (static textures and index). Each level asks for 6 textures out of a set that drifts from level
// to level, so the cache fills up during the first levels and then evicts one texture for every
// one it loads: flat from there on.
using System.Collections.Generic;

namespace LeakCorpus
{
    class Texture
    {
        public int Id;
        public byte[] Pixels = new byte[4096];
    }

    static class LruCache
    {
        const int Capacity = 12;
        static LinkedList<Texture> textures = new LinkedList<Texture>(); // most recent first
        static Dictionary<int, LinkedListNode<Texture>> index = new Dictionary<int, LinkedListNode<Texture>>();

        static Texture Get(int id)
        {
            LinkedListNode<Texture> node;
            if (index.TryGetValue(id, out node))
            {
                textures.Remove(node);
                textures.AddFirst(node);
                return node.Value;
            }
            if (textures.Count == Capacity)
            {
                index.Remove(textures.Last.Value.Id); // evicted: garbage now
                textures.RemoveLast();
            }
            var t = new Texture { Id = id };
            index[id] = textures.AddFirst(t);
            return t;
        }

        static int Main(string[] args)
        {
            long sum = 0;
            for (int n = 0; n < Game.Levels(args); n++)
            {
                Game.Begin(n);
                for (int i = 0; i < 6; i++) sum += Get(n * 3 + i).Pixels[i] + Game.Play(n, 18);
                sum += Game.Finish(n);
            }
            return sum == 0 ? 1 : 0;
        }
    }
}
