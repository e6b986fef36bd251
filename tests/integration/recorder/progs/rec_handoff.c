/* Blocks allocated on one thread and freed on another: PAIRS producer/consumer pairs; each
 * producer mallocs BLOCKS blocks of varying sizes and hands them through a bounded ring to its
 * consumer, which frees them. glibc gives a block freed by the consumer back to its producer once
 * the consumer's tcache bin is full, so a recorder that took a Free's sequence number after the
 * real free would log the producer's reuse of the address before the consumer's free.
 * Every fourth block the consumer first grows with realloc (the recorder takes a realloc's
 * sequence number before the real call, so the old block's reuse by the producer comes after it).
 * Every producer and consumer brackets its work with heapman_event("begin") / ("end"). After all
 * joined it prints one line per pair (B: bytes the producer requested, R: reallocs):
 *
 *   pair K producer TID consumer TID blocks N bytes B reallocs R
 *
 * Usage: rec_handoff [PAIRS [BLOCKS]]   (default 4 and 200000)
 */
#define _GNU_SOURCE
#include <heapman.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "prog_util.h"

enum { kMaxPairs = 16, kRing = 64 };

struct Pair {
  pthread_t producer, consumer;
  unsigned index;
  pid_t producerTid, consumerTid;
  uint64_t bytes, reallocs;
  void* ring[kRing];
  _Atomic uint64_t head, tail; /* head: next to write (producer), tail: next to read */
};

static struct Pair pairs[kMaxPairs];
static uint64_t blocks = 200000;

static void* produce(void* arg) {
  struct Pair* p = arg;
  p->producerTid = gettid();
  uint32_t state = 0x51ED270Bu * (p->index + 1);
  uint64_t bytes = 0;
  heapman_event("begin");
  for (uint64_t i = 0; i < blocks; ++i) {
    size_t size = 16 + hmt_next(&state) % 200;
    void* b = malloc(size);
    if (!b) abort();
    bytes += size;
    uint64_t head = atomic_load_explicit(&p->head, memory_order_relaxed);
    while (head - atomic_load_explicit(&p->tail, memory_order_acquire) == kRing) sched_yield();
    p->ring[head % kRing] = b;
    atomic_store_explicit(&p->head, head + 1, memory_order_release);
  }
  heapman_event("end");
  p->bytes = bytes;
  return NULL;
}

static void* consume(void* arg) {
  struct Pair* p = arg;
  p->consumerTid = gettid();
  uint64_t reallocs = 0;
  heapman_event("begin");
  for (uint64_t i = 0; i < blocks; ++i) {
    uint64_t tail = atomic_load_explicit(&p->tail, memory_order_relaxed);
    while (atomic_load_explicit(&p->head, memory_order_acquire) == tail) sched_yield();
    void* b = p->ring[tail % kRing];
    atomic_store_explicit(&p->tail, tail + 1, memory_order_release);
    hmt_escape(b);
    if ((i & 3) == 3) {
      b = realloc(b, 300 + i % 100);
      if (!b) abort();
      hmt_escape(b);
      ++reallocs;
    }
    free(b);
  }
  heapman_event("end");
  p->reallocs = reallocs;
  return NULL;
}

int main(int argc, char** argv) {
  unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 4;
  if (argc > 2) blocks = strtoull(argv[2], NULL, 10);
  if (n < 1 || n > kMaxPairs) {
    fprintf(stderr, "usage: rec_handoff [PAIRS [BLOCKS]], 1 <= PAIRS <= %d\n", kMaxPairs);
    return 2;
  }
  for (unsigned i = 0; i < n; ++i) {
    pairs[i].index = i;
    if (pthread_create(&pairs[i].producer, NULL, produce, &pairs[i]) != 0 ||
        pthread_create(&pairs[i].consumer, NULL, consume, &pairs[i]) != 0) {
      fprintf(stderr, "rec_handoff: pthread_create failed\n");
      return 1;
    }
  }
  for (unsigned i = 0; i < n; ++i) {
    pthread_join(pairs[i].producer, NULL);
    pthread_join(pairs[i].consumer, NULL);
  }
  for (unsigned i = 0; i < n; ++i)
    printf("pair %u producer %d consumer %d blocks %" PRIu64 " bytes %" PRIu64 " reallocs %" PRIu64
           "\n",
           i, (int)pairs[i].producerTid, (int)pairs[i].consumerTid, blocks, pairs[i].bytes,
           pairs[i].reallocs);
  return 0;
}
