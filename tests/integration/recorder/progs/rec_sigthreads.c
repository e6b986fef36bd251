/* Dies of a signal while worker threads allocate without pause: what the log must still hold.
 *
 *   rec_sigthreads THREADS HOW [MS]
 *
 * THREADS workers each allocate 48-byte blocks in a loop (keeping 32 of them live, freeing the
 * oldest: frees take sequence numbers, allocations only read them) and count every malloc that
 * has returned. After MS milliseconds (default 150) the main thread adds up the counts, writes
 * "allocs N\n" on stdout and then dies by HOW while the workers go on:
 *   SIGNUMBER   raise(SIGNUMBER) (default action)
 *   segv        a store through a null pointer
 *   abort       abort()
 * Every allocation counted before the line was written was committed to the recorder before the
 * signal: the log must hold at least N 48-byte allocations of the workers, or say how many
 * events it lost.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prog_util.h"

#define kMaxThreads 64
#define kLive 32

static _Atomic unsigned long g_counts[kMaxThreads * 8]; /* a cache line each */

static void* worker(void* arg) {
  _Atomic unsigned long* count = &g_counts[(size_t)arg * 8];
  void* live[kLive] = {0};
  for (unsigned i = 0;; ++i) {
    unsigned k = i % kLive;
    free(live[k]);
    live[k] = malloc(48);
    hmt_escape(live[k]);
    atomic_store_explicit(count, atomic_load_explicit(count, memory_order_relaxed) + 1,
                          memory_order_release);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: rec_sigthreads THREADS SIGNUMBER|segv|abort [MS]\n");
    return 2;
  }
  long threads = atol(argv[1]);
  if (threads < 1 || threads > kMaxThreads) return 2;
  long ms = argc > 3 ? atol(argv[3]) : 150;
  for (long t = 0; t < threads; ++t) {
    pthread_t th;
    if (pthread_create(&th, NULL, worker, (void*)t) != 0) return 3;
  }
  struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&pause, NULL);
  unsigned long total = 0;
  for (long t = 0; t < threads; ++t)
    total += atomic_load_explicit(&g_counts[t * 8], memory_order_acquire);
  char line[64];
  int n = snprintf(line, sizeof line, "allocs %lu\n", total);
  (void)!write(1, line, (size_t)n);
  if (strcmp(argv[2], "segv") == 0) {
    static volatile uintptr_t null_address; /* 0, which the compiler cannot assume */
    *(volatile int*)null_address = 1;
  } else if (strcmp(argv[2], "abort") == 0) {
    abort();
  } else {
    raise(atoi(argv[2]));
  }
  return 4; /* not reached */
}
