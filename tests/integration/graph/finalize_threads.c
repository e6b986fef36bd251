/* The finalization queue under threads: 4 workers register finalizers (GC_register_finalizer_no_order,
 * each with 16 bytes of client data) on objects they drop at once or after a while, while a
 * finalizer thread runs GC_invoke_finalizers whenever the collector has queued something
 * (finalization on demand) and collections happen on any of them. At the end everything is
 * collected and finalized. Output: "registered N" and "finalized M" (equal). */
#define GC_THREADS
#include <gc/gc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

enum { kWorkers = 4, kRounds = 20, kPerRound = 2000, kKept = 64 };

static atomic_long g_registered, g_finalized;
static atomic_int g_done;

static void GC_CALLBACK on_finalize(void* obj, void* data) {
  (void)obj;
  (void)data;
  atomic_fetch_add(&g_finalized, 1);
}

static void* worker(void* arg) {
  void* kept[kKept] = {0};
  unsigned seed = (unsigned)(long)arg * 7919u + 1u;
  for (int r = 0; r < kRounds; ++r)
    for (int i = 0; i < kPerRound; ++i) {
      void** p = GC_malloc(32 + 16 * (i % 4));
      GC_register_finalizer_no_order(p, on_finalize, GC_malloc(16), NULL, NULL);
      atomic_fetch_add(&g_registered, 1);
      seed = seed * 1103515245u + 12345u;
      kept[(seed >> 8) % kKept] = p; /* the one it replaces is dropped */
    }
  return kept[0] ? NULL : NULL; /* the last ones are dropped with the thread */
}

static void* finalizer(void* arg) {
  (void)arg;
  while (!atomic_load(&g_done)) {
    if (GC_should_invoke_finalizers())
      GC_invoke_finalizers();
    else
      sched_yield();
  }
  return NULL;
}

int main(void) {
  GC_INIT();
  GC_allow_register_threads();
  GC_set_finalize_on_demand(1);
  pthread_t fin, workers[kWorkers];
  pthread_create(&fin, NULL, finalizer, NULL);
  for (long i = 0; i < kWorkers; ++i) pthread_create(&workers[i], NULL, worker, (void*)i);
  for (int i = 0; i < kWorkers; ++i) pthread_join(workers[i], NULL);
  atomic_store(&g_done, 1);
  pthread_join(fin, NULL);
  for (int i = 0; i < 20 && atomic_load(&g_finalized) < atomic_load(&g_registered); ++i) {
    GC_gcollect();
    GC_invoke_finalizers();
  }
  printf("registered %ld\nfinalized %ld\n", atomic_load(&g_registered), atomic_load(&g_finalized));
  return 0;
}
