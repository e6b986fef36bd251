/* Ground truth for the heap map: a small game loop on the Boehm collector and malloc whose big
 * objects land on known pixels, with frame marks paced at 10 ms (so a --realtime video has a
 * recorded span to match) and custom events.
 *
 *   map_truth
 *
 * Three waves of 20 frames each (events wave_start / wave_end), every frame small GC objects
 * (spawnWave) and a collection every 5 frames. Kept alive to the end, each printed as
 * "NAME KIND ADDRESS SIZE" after the last wave:
 *   atomic   GC_malloc_atomic      256 KiB
 *   normal   GC_malloc             128 KiB
 *   uncoll   GC_malloc_uncollectable 128 KiB
 *   native   malloc                512 KiB
 * and "freed native ADDRESS SIZE": a 512 KiB malloc block freed after the event "drop" (so a map
 * at the end since "drop" draws it red). */
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapman.h"

void* g_keep[64]; /* not static: the compiler keeps the stores */

/* The frame's small objects: blame charges them here, the big ones to main. */
__attribute__((noinline)) static void spawnWave(int f) {
  for (int i = 0; i < 40; ++i) {
    void* a = GC_malloc(32 + 16 * (i % 5));
    void* b = GC_malloc_atomic(64 + 32 * (i % 3));
    if (i % 8 == 0) g_keep[2 + (f + i) % 60] = a;
    (void)b;
  }
}

static void sleepMs(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

int main(void) {
  GC_INIT();
  void* atomic = GC_malloc_atomic(256 << 10);
  void* normal = GC_malloc(128 << 10);
  void* uncoll = GC_malloc_uncollectable(128 << 10);
  void* native = malloc(512 << 10);
  void* doomed = malloc(512 << 10);
  memset(atomic, 1, 256 << 10);
  memset(native, 2, 512 << 10);
  memset(doomed, 3, 512 << 10);
  g_keep[0] = atomic;
  g_keep[1] = normal;
  for (int wave = 0; wave < 3; ++wave) {
    heapman_event("wave_start");
    for (int f = 0; f < 20; ++f) {
      spawnWave(f);
      if (f % 5 == 4) GC_gcollect();
      heapman_frame();
      sleepMs(10);
    }
    heapman_event("wave_end");
    if (wave == 1) {
      heapman_event("drop");
      free(doomed);
    }
  }
  printf("atomic gc_atomic %p %d\n", atomic, 256 << 10);
  printf("normal gc %p %d\n", normal, 128 << 10);
  printf("uncoll gc_uncollectable %p %d\n", uncoll, 128 << 10);
  printf("native native %p %d\n", native, 512 << 10);
  printf("freed native %p %d\n", doomed, 512 << 10);
  return 0;
}
