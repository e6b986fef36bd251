/* A heap for the graph benchmark on the real collector (bench/graph_bench log): N objects of
 * 16-64 bytes (GC_malloc), each with up to 3 pointers to objects allocated shortly before it
 * (and 1 in 8 to any earlier one), 1 in 4 atomic (GC_malloc_atomic) with no pointers, all held
 * from a static table of 1024 entry points; then one collection (the one to dump), which keeps
 * what the table still reaches.
 * usage: graph_bench_heap N [P]   (record with heaprec run --ram-dumps every)
 *   P: pointers per object at most (default 3; 8 fills every word of a scanned object: about 4
 *      edges per live object, the "10 M objects / 40 M edges" of issue 14's goal). */
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>

void* g_entry[1024];  /* extern: the compiler keeps it (a write-only static would go) */

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  size_t pointers = argc > 2 ? (size_t)atol(argv[2]) : 3;
  GC_INIT();
  GC_disable(); /* one collection, at the end */
  void** all = malloc((size_t)n * sizeof(void*));
  unsigned long long x = 88172645463325252ull;
  for (long i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t words = 2 + x % 7;
    if (x % 4 == 0) {
      all[i] = GC_malloc_atomic(words * sizeof(void*));
      continue;
    }
    void** o = GC_malloc(words * sizeof(void*));
    for (size_t w = 0; w < pointers && w < words && i > 0; ++w) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      long j = x % 8 == 0 ? (long)(x % (unsigned long long)i) : i - 1 - (long)(x % 64 < (unsigned long long)i ? x % 64 : 0);
      o[w] = all[j];
    }
    all[i] = o;
    if (i % 1024 == 0) g_entry[(i / 1024) % 1024] = o;
  }
  /* The newest objects from the table; what nothing reaches any more is collected. */
  for (long i = 0; i < 1024 && i < n; ++i) g_entry[i] = all[n - 1 - i];
  free(all);
  GC_enable();
  GC_gcollect();
  printf("graph_bench_heap: %ld objects, gc %lu\n", n, (unsigned long)GC_get_gc_no());
  return 0;
}
