/* Leak held by a static and by a thread's stack at once: the static g_world's bag of loot gains
 * a link per level and is never emptied; main keeps the bag in a local across the level too (a
 * volatile, so it stays in its frame), a shorter way to the list than the static's. The root
 * path must start at the static, which will still hold the list when main's frame has moved on,
 * and say that the stack holds it too. */
#include "corpus.h"

struct Loot {
  struct Loot* next;
  char* label; /* GC_malloc_atomic */
};

struct Bag {
  struct Loot* first; /* the leak: never emptied */
  int count;
};

struct World {
  long ticks;
  struct Bag* bag;
};
static struct World* g_world;

__attribute__((noinline)) static void pick_up(struct Bag* b, int level) {
  struct Loot* l = (struct Loot*)GC_malloc(sizeof(struct Loot));
  l->label = (char*)GC_malloc_atomic(40);
  snprintf(l->label, 40, "loot of level %d", level);
  l->next = b->first;
  b->first = l;
  ++b->count;
}

int main(int argc, char** argv) {
  GC_INIT();
  g_world = (struct World*)GC_malloc(sizeof(struct World));
  g_world->bag = (struct Bag*)GC_malloc(sizeof(struct Bag));
  struct Bag* volatile held = g_world->bag;
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    heapman_event("level_start");
    struct Level* l = make_level(n);
    sum += play_frames(l);
    pick_up(held, n);
    end_level();
    sum += held->count;
  }
  return sum == 0;
}
