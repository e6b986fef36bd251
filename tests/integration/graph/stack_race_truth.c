/* Ground truth for a thread stack that changes as soon as the world restarts. Before each of 20
 * collections the main thread allocates 8 objects and hands their addresses, masked, to a
 * worker, which holds each only in one word of its stack and flips every word, without pause,
 * between the object's address and that address xor a mask (one xor instruction on memory: the
 * address is never in a register, so only the stack word can keep the object). An object
 * survives a collection iff its word held its address when the world stopped; a copy of the
 * stack made after the restart finds the word flipped about half the time, and the object alive
 * but unreachable. 100 000 more objects held from a static array make the recorder's work at a
 * collection, after the restart, long enough for the worker to run. Prints "gcs N", the number of the last collection.
 * usage: stack_race_truth */
#define GC_THREADS
#include <gc/gc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum { kWords = 8, kCollections = 20 };
static const uintptr_t kMask = 0x5a5a5a5a5a5a5a5aull;
static uintptr_t g_hidden[kWords]; /* this round's addresses, masked: no root holds them */
static volatile int g_round, g_taken, g_stop;
enum { kKept = 100000 };
static void* g_kept[kKept];

static void* worker(void* arg) {
  (void)arg;
  uintptr_t words[kWords]; /* on this thread's stack; masked: no object held */
  for (int i = 0; i < kWords; ++i) words[i] = kMask;
  int taken = 0;
  while (!g_stop) {
    if (g_round != taken) {
      taken = g_round;
      for (int i = 0; i < kWords; ++i) words[i] = g_hidden[i];
      g_taken = taken;
    }
    for (int i = 0; i < kWords; ++i) __asm__ volatile("xorq %1, %0" : "+m"(words[i]) : "r"(kMask));
  }
  return NULL;
}

/* The round's objects are allocated on a thread of their own, which has ended before the
 * collection: no stack the collector scans holds their addresses but the worker's words. (The
 * collecting thread's own stack is copied after marking, and a stale address the allocator left
 * deep in it, which the collector saw and its later frames overwrote, would be missed; this
 * program tests the other threads' stacks.) */
static void* allocate(void* arg) {
  (void)arg;
  for (int i = 0; i < kWords; ++i) g_hidden[i] = (uintptr_t)GC_malloc(64) ^ kMask;
  return NULL;
}

int main(void) {
  GC_INIT();
  for (int i = 0; i < kKept; ++i) g_kept[i] = GC_malloc(64);
  pthread_t w;
  if (pthread_create(&w, NULL, worker, NULL) != 0) return 1;
  struct timespec pause = {0, 1000000};
  for (int round = 1; round <= kCollections; ++round) {
    pthread_t a;
    if (pthread_create(&a, NULL, allocate, NULL) != 0 || pthread_join(a, NULL) != 0) return 1;
    g_round = round;
    while (g_taken != round) sched_yield();
    nanosleep(&pause, NULL);
    GC_gcollect();
  }
  g_stop = 1;
  pthread_join(w, NULL);
  printf("gcs %lu\n", (unsigned long)GC_get_gc_no());
  return 0;
}
