/* Ground truth for comparing two RAM dumps object by object (heapman diff / types over dumps):
 * between two collections, recorded with `heaprec run --ram-dumps every`,
 *   keep_old()  allocates 10 objects of 40 bytes held by a static table throughout (survive)
 *   drop_old()  allocates 6 objects of 56 bytes, dropped before the second collection (freed)
 *   make_new()  allocates 7 objects of 72 bytes after the first collection, held (new)
 * Each dropped object has a disappearing link: after the second collection the program prints
 * how many the collector really reclaimed ("dropped_collected N"; a stale copy of an address on
 * the stack may keep one), then "gc1 N" and "gc2 N", the two collections' numbers. */
#include <gc/gc.h>
#include <stdio.h>
#include <string.h>

enum { kKept = 10, kDropped = 6, kNew = 7 };

static void* volatile g_kept[kKept]; /* volatile: the stores stay (the tables are never read) */
static void* volatile g_dropped[kDropped];
static void* volatile g_new[kNew];
static GC_word g_links[kDropped]; /* hidden pointers: hold nothing, cleared by the collector */

static __attribute__((noinline)) void keep_old(void) {
  for (int i = 0; i < kKept; ++i) g_kept[i] = GC_malloc(40);
}

static __attribute__((noinline)) void drop_old(void) {
  for (int i = 0; i < kDropped; ++i) {
    g_dropped[i] = GC_malloc(56);
    g_links[i] = GC_HIDE_POINTER(g_dropped[i]);
    GC_general_register_disappearing_link((void**)&g_links[i], g_dropped[i]);
  }
}

static __attribute__((noinline)) void make_new(void) {
  for (int i = 0; i < kNew; ++i) g_new[i] = GC_malloc(72);
}

static __attribute__((noinline)) void scrub(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}

int main(void) {
  GC_INIT();
  keep_old();
  drop_old();
  scrub();
  GC_gcollect();
  unsigned long gc1 = (unsigned long)GC_get_gc_no();
  for (int i = 0; i < kDropped; ++i) g_dropped[i] = NULL;
  make_new();
  scrub();
  GC_gcollect();
  unsigned long gc2 = (unsigned long)GC_get_gc_no();
  int collected = 0;
  for (int i = 0; i < kDropped; ++i) collected += g_links[i] == 0;
  printf("dropped_collected %d\ngc1 %lu\ngc2 %lu\n", collected, gc1, gc2);
  return 0;
}
