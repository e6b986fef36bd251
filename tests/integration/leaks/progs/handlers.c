/* Leak: each level subscribes a score handler to a static registry and never removes it
 * (event handler never removed).
 * Not a leak: a bullet pool whose bullets are taken and given back at every level. */
#include "corpus.h"

struct Handler {
  void (*fn)(struct Handler*, int);
  struct Level* level; /* what the handler updates */
};
static struct Registry {
  struct Handler** items; /* GC_malloc, grown by doubling */
  size_t count, capacity;
} g_score_changed;

struct Bullet {
  float x, y, dx, dy;
  int live;
};
enum { kPool = 32 };
static struct Bullet** g_pool; /* kPool bullets, allocated once */
static int g_free[kPool];

static void on_score(struct Handler* h, int score) {
  if (score > h->level->score) h->level->score = score;
}

__attribute__((noinline)) static void registry_add(struct Registry* r, struct Handler* h) {
  if (r->count == r->capacity) {
    size_t cap = r->capacity ? 2 * r->capacity : 2;
    struct Handler** items = (struct Handler**)GC_malloc(cap * sizeof(struct Handler*));
    if (r->count) memcpy(items, r->items, r->count * sizeof(struct Handler*));
    r->items = items;
    r->capacity = cap;
  }
  r->items[r->count++] = h;
}

__attribute__((noinline)) static void subscribe_hud(struct Level* l) {
  struct Handler* h = (struct Handler*)GC_malloc(sizeof(struct Handler));
  h->fn = on_score;
  h->level = l;
  registry_add(&g_score_changed, h);
}

__attribute__((noinline)) static void make_pool(void) {
  g_pool = (struct Bullet**)GC_malloc(kPool * sizeof(struct Bullet*));
  for (int i = 0; i < kPool; ++i) g_pool[i] = (struct Bullet*)GC_malloc(sizeof(struct Bullet));
}

static struct Bullet* take_bullet(void) {
  for (int i = 0; i < kPool; ++i)
    if (!g_free[i]) {
      g_free[i] = 1;
      g_pool[i]->live = 1;
      return g_pool[i];
    }
  return NULL;
}

int main(int argc, char** argv) {
  GC_INIT();
  make_pool();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    heapman_event("level_start");
    struct Level* l = make_level(n);
    subscribe_hud(l);
    for (int i = 0; i < 20; ++i) take_bullet()->x = (float)i;
    sum += play_frames(l);
    for (size_t i = 0; i < g_score_changed.count; ++i)
      g_score_changed.items[i]->fn(g_score_changed.items[i], (int)sum);
    memset(g_free, 0, sizeof g_free); /* every bullet back in the pool */
    end_level();
  }
  return sum == 0;
}
