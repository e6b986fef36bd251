/* Leak: a static linked list that remembers every level (static list).
 * Not a leak: a tile cache that fills up over the first three levels, then stays flat. */
#include "corpus.h"

struct History {
  struct History* next;
  struct Level* level;
};
static struct History* g_history; /* the leak: never trimmed */

struct TileCache {
  unsigned char* tiles[3]; /* GC_malloc_atomic, 4 KiB each */
};
static struct TileCache* g_tiles;

__attribute__((noinline)) static void remember_level(struct Level* l) {
  struct History* h = (struct History*)GC_malloc(sizeof(struct History));
  h->level = l;
  h->next = g_history;
  g_history = h;
}

__attribute__((noinline)) static unsigned char* load_tile(int level) {
  int key = level < 3 ? level : 2; /* three tile sets in all */
  if (!g_tiles->tiles[key]) {
    g_tiles->tiles[key] = (unsigned char*)GC_malloc_atomic(4096);
    memset(g_tiles->tiles[key], key, 4096);
  }
  return g_tiles->tiles[key];
}

int main(int argc, char** argv) {
  GC_INIT();
  g_tiles = (struct TileCache*)GC_malloc(sizeof(struct TileCache));
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    heapman_event("level_start");
    struct Level* l = make_level(n);
    sum += play_frames(l) + load_tile(n)[0];
    remember_level(l);
    end_level();
  }
  return sum == 0;
}
