/* Two leaks under one holder: the World (static g_world, made by world_new) keeps
 *   - corpses: a linked list that drop_corpse prepends 2 corpses to each level (each with a
 *     512-byte ragdoll pose), never removed;
 *   - decals: a growable array (decals_grow doubles it) that paint_decal appends 5 decals to
 *     each level, never removed.
 * Not a leak: the World's sound bank, 8 sounds loaded at start-up and never changed. */
#include "game.h"

struct Corpse {
  struct Corpse* next;
  int level;
  float* pose; /* GC_malloc_atomic, 512 bytes */
};
struct Decal {
  float x, y, angle;
  char* texture; /* GC_malloc_atomic, 96 bytes */
};
struct World {
  struct Corpse* corpses;  /* leak 1 */
  struct Decal** decals;   /* leak 2 */
  size_t decal_count, decal_capacity;
  unsigned char* sounds[8]; /* GC_malloc_atomic, 2 KiB each: loaded once */
};
static struct World* g_world;

NOINLINE static struct World* world_new(void) {
  struct World* w = (struct World*)GC_malloc(sizeof(struct World));
  for (int i = 0; i < 8; ++i) {
    w->sounds[i] = (unsigned char*)GC_malloc_atomic(2048);
    memset(w->sounds[i], i, 2048);
  }
  return w;
}

NOINLINE static void drop_corpse(struct World* w, int level) {
  struct Corpse* c = (struct Corpse*)GC_malloc(sizeof(struct Corpse));
  c->level = level;
  c->pose = (float*)GC_malloc_atomic(512);
  memset(c->pose, 0, 512);
  c->next = w->corpses;
  w->corpses = c;
}

NOINLINE static void decals_grow(struct World* w) {
  size_t cap = w->decal_capacity ? 2 * w->decal_capacity : 4;
  struct Decal** items = (struct Decal**)GC_malloc(cap * sizeof(struct Decal*));
  if (w->decal_count) memcpy(items, w->decals, w->decal_count * sizeof(struct Decal*));
  w->decals = items;
  w->decal_capacity = cap;
}

NOINLINE static void paint_decal(struct World* w, int level) {
  struct Decal* d = (struct Decal*)GC_malloc(sizeof(struct Decal));
  d->x = (float)rnd(1000);
  d->texture = (char*)GC_malloc_atomic(96);
  snprintf(d->texture, 96, "scorch-%d", level);
  if (w->decal_count == w->decal_capacity) decals_grow(w);
  w->decals[w->decal_count++] = d;
}

int main(int argc, char** argv) {
  GC_INIT();
  g_world = world_new();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    for (int wave = 0; wave < 5; ++wave) {
      sum += play_frames(n, 20);
      paint_decal(g_world, n);
      if (wave % 2) drop_corpse(g_world, n);
      sum += g_world->sounds[wave][0];
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
