/* RAM dumps of a bdwgc program: objects with known contents, kept reachable from a static root.
 * usage: rec_gc_dump N
 * Allocates N objects of 64 bytes (byte j of object i is (i % 10) * 16 + j % 16: ten distinct
 * contents, so a deduplicating dump stores ten), keeps them in a static array, collects twice,
 * and prints "object ADDRESS PATTERN" per object and "root ADDRESS SIZE" for the static array. */
#define GC_THREADS
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char* g_objects[4096];

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100;
  if (n > 4096) n = 4096;
  GC_INIT();
  for (int i = 0; i < n; ++i) {
    g_objects[i] = GC_malloc_atomic(64);
    for (int j = 0; j < 64; ++j) g_objects[i][j] = (unsigned char)((i % 10) * 16 + j % 16);
  }
  for (int i = 0; i < 1000; ++i) GC_malloc(32); /* garbage */
  GC_gcollect();
  GC_gcollect();
  for (int i = 0; i < n; ++i) printf("object 0x%lx %d\n", (unsigned long)g_objects[i], i % 10);
  printf("root 0x%lx %zu\n", (unsigned long)g_objects, sizeof g_objects);
  return 0;
}
