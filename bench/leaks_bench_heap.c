/* A heap for the leak benchmark (bench/leaks_bench): a world of N objects of 16-64 bytes
 * (graph_bench_heap's shape: up to 3 pointers each to objects allocated shortly before, 1 in 4
 * atomic, all held from one table), then LEVELS levels; each level makes 40 000 objects of garbage
 * and leaks 2 000 entries (each holding 4 more objects) into a static linked list. A collection
 * follows each heapman_event("level_end"): recorded with `heaprec run --ram-dumps
 * event:level_end`, the log has LEVELS dumped points of about N + 10 000 x level objects.
 * usage: leaks_bench_heap [N [LEVELS]]   (default 920 000 and 8: 1 M live objects at the last of
 * 8 points) */
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>

#include "heapman.h"

void** g_world; /* extern: the compiler keeps it (a write-only static would go) */
struct Leak {
  struct Leak* next;
  void* payload[4];
};
struct Leak* g_leaked;

static unsigned long long g_x = 88172645463325252ull;
static unsigned long long next_random(void) {
  g_x ^= g_x << 13, g_x ^= g_x >> 7, g_x ^= g_x << 17;
  return g_x;
}

/* n objects, each pointing to up to 3 made shortly before; returns the table (malloc). */
static void** make_objects(long n) {
  void** all = malloc((size_t)n * sizeof(void*));
  for (long i = 0; i < n; ++i) {
    unsigned long long x = next_random();
    size_t words = 2 + x % 7;
    if (x % 4 == 0) {
      all[i] = GC_malloc_atomic(words * sizeof(void*));
      continue;
    }
    void** o = GC_malloc(words * sizeof(void*));
    for (size_t w = 0; w < 3 && w < words && i > 0; ++w) {
      x = next_random();
      long j = x % 8 == 0 ? (long)(x % (unsigned long long)i) : (i > 64 ? i - 1 - (long)(x % 64) : i - 1);
      o[w] = all[j];
    }
    all[i] = o;
  }
  return all;
}

__attribute__((noinline)) static void leak_entry(void) {
  struct Leak* l = GC_malloc(sizeof(struct Leak));
  for (int i = 0; i < 4; ++i) l->payload[i] = GC_malloc(32);
  l->next = g_leaked;
  g_leaked = l;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 920000;
  int levels = argc > 2 ? atoi(argv[2]) : 8;
  GC_INIT();
  GC_disable();
  void** world = make_objects(n);
  /* The world stays, held from one table (a GC object, so that the graph sees its pointers). */
  g_world = GC_malloc_ignore_off_page((size_t)n * sizeof(void*));
  for (long i = 0; i < n; ++i) g_world[i] = world[i];
  free(world);
  GC_enable();
  for (int level = 0; level < levels; ++level) {
    heapman_event("level_start");
    GC_disable();
    free(make_objects(40000)); /* garbage of the level */
    for (int i = 0; i < 2000; ++i) leak_entry();
    GC_enable();
    heapman_event("level_end");
    GC_gcollect();
  }
  printf("leaks_bench_heap: %ld world objects, gc %lu\n", n, (unsigned long)GC_get_gc_no());
  return 0;
}
