/* Leak: a cache keyed by level number whose entries are never evicted (cache keyed by level).
 * Not a leak: a ring buffer of the last 8 messages. */
#include "corpus.h"

struct Asset {
  struct Asset* next;
  int key;
  struct Level* level;   /* the level the assets were loaded for */
  unsigned char* pixels; /* GC_malloc_atomic, 8 KiB */
};
struct AssetCache {
  struct Asset* buckets[64];
};
static struct AssetCache* g_assets;

struct Ring {
  char* messages[8]; /* GC_malloc_atomic, 512 bytes each */
  unsigned next;
};
static struct Ring* g_ring;

__attribute__((noinline)) static struct AssetCache* cache_new(void) {
  return (struct AssetCache*)GC_malloc(sizeof(struct AssetCache));
}

__attribute__((noinline)) static void cache_put(struct AssetCache* c, int key, struct Level* l) {
  struct Asset* a = (struct Asset*)GC_malloc(sizeof(struct Asset));
  a->key = key;
  a->level = l;
  a->pixels = (unsigned char*)GC_malloc_atomic(8192);
  memset(a->pixels, key, 8192);
  a->next = c->buckets[key % 64];
  c->buckets[key % 64] = a;
}

__attribute__((noinline)) static void log_message(int level, int i) {
  char* m = (char*)GC_malloc_atomic(512);
  snprintf(m, 512, "level %d message %d", level, i);
  g_ring->messages[g_ring->next++ % 8] = m;
}

int main(int argc, char** argv) {
  GC_INIT();
  g_assets = cache_new();
  g_ring = (struct Ring*)GC_malloc(sizeof(struct Ring));
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    heapman_event("level_start");
    struct Level* l = make_level(n);
    cache_put(g_assets, n, l);
    for (int i = 0; i < 8; ++i) log_message(n, i);
    sum += play_frames(l);
    end_level();
  }
  return sum == 0;
}
