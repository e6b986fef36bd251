/* Multi-thread churn: THREADS workers each make PAIRS malloc/free pairs of varying sizes, each
 * bracketed by its own heapman_event("begin") / heapman_event("end") on that worker. The main
 * thread only starts and joins them. After all joined it prints
 *
 *   pid PID
 *   worker I tid TID pairs P bytes B      one line per worker; B sums the requested sizes
 *
 * Usage: rec_threads [THREADS [PAIRS]]   (default 8 and 1000000)
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "prog_util.h"

enum { kMaxThreads = 64 };

struct Worker {
  pthread_t thread;
  unsigned index;
  pid_t tid;
  uint64_t pairs;
  uint64_t bytes;
};

static struct Worker workers[kMaxThreads];
static uint64_t pairsPerThread = 1000000;

static void* work(void* arg) {
  struct Worker* w = arg;
  w->tid = gettid();
  uint32_t state = 0x9E3779B9u * (w->index + 1);
  uint64_t bytes = 0;
  heapman_event("begin");
  for (uint64_t i = 0; i < pairsPerThread; ++i) {
    uint32_t x = hmt_next(&state);
    /* Mostly small blocks; one in 1024 between 4 KiB and 68 KiB. */
    size_t size = (x & 1023) == 0 ? 4096 + (x >> 10) % 65536 : 1 + (x >> 10) % 600;
    void* p = malloc(size);
    if (!p) abort();
    hmt_escape(p);
    free(p);
    bytes += size;
  }
  heapman_event("end");
  w->pairs = pairsPerThread;
  w->bytes = bytes;
  return NULL;
}

int main(int argc, char** argv) {
  unsigned threads = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 8;
  if (argc > 2) pairsPerThread = strtoull(argv[2], NULL, 10);
  if (threads < 1 || threads > kMaxThreads) {
    fprintf(stderr, "usage: rec_threads [THREADS [PAIRS]], 1 <= THREADS <= %d\n", kMaxThreads);
    return 2;
  }
  for (unsigned i = 0; i < threads; ++i) {
    workers[i].index = i;
    if (pthread_create(&workers[i].thread, NULL, work, &workers[i]) != 0) {
      fprintf(stderr, "rec_threads: pthread_create failed\n");
      return 1;
    }
  }
  for (unsigned i = 0; i < threads; ++i) pthread_join(workers[i].thread, NULL);
  printf("pid %d\n", (int)getpid());
  for (unsigned i = 0; i < threads; ++i)
    printf("worker %u tid %d pairs %" PRIu64 " bytes %" PRIu64 "\n", i, (int)workers[i].tid,
           workers[i].pairs, workers[i].bytes);
  return 0;
}
