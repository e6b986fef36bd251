/* The ring memory benchmark's program (bench/run_thread_memory.sh): THREADS threads each make
 * PAIRS malloc/free pairs of 16-256 bytes through a 3-frame call chain, keeping LIVE blocks alive
 * between them all (LIVE / THREADS each), then wait together while the main thread reads the
 * process's resident memory, so that every thread's ring is still there.
 * Prints "rss_kb N hwm_kb N".
 * Usage: thread_memory THREADS PAIRS LIVE */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long g_pairs, g_live;
static int g_threads;
static pthread_barrier_t g_done, g_measured;

static __attribute__((noinline)) void* leafAlloc(size_t n) { return malloc(n); }
static __attribute__((noinline)) void* midAlloc(size_t n) { return leafAlloc(n); }
static __attribute__((noinline)) void* topAlloc(size_t n) { return midAlloc(n); }

static void* work(void* arg) {
  unsigned seed = (unsigned)(size_t)arg * 2654435761u + 1;
  long live = g_live / g_threads;
  void** held = live ? calloc((size_t)live, sizeof(void*)) : NULL;
  for (long i = 0; i < live; i++) held[i] = topAlloc(16 + (rand_r(&seed) & 0xF0));
  for (long i = 0; i < g_pairs; i++) {
    size_t n = 16 + (rand_r(&seed) & 0xF0);
    if (live) {
      long k = rand_r(&seed) % live;
      free(held[k]);
      held[k] = topAlloc(n);
    } else {
      free(topAlloc(n));
    }
  }
  pthread_barrier_wait(&g_done);
  pthread_barrier_wait(&g_measured);
  for (long i = 0; i < live; i++) free(held[i]);
  free(held);
  return NULL;
}

static long statusKb(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0) v = atol(line + n + 1);
  if (f) fclose(f);
  return v;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: thread_memory THREADS PAIRS LIVE\n");
    return 2;
  }
  g_threads = atoi(argv[1]);
  g_pairs = atol(argv[2]);
  g_live = atol(argv[3]);
  if (g_threads < 1) return 2;
  pthread_barrier_init(&g_done, NULL, (unsigned)g_threads + 1);
  pthread_barrier_init(&g_measured, NULL, (unsigned)g_threads + 1);
  pthread_t* t = calloc((size_t)g_threads, sizeof(pthread_t));
  for (int i = 0; i < g_threads; i++)
    if (pthread_create(&t[i], NULL, work, (void*)(size_t)(i + 1)) != 0) return 1;
  pthread_barrier_wait(&g_done);
  printf("rss_kb %ld hwm_kb %ld\n", statusKb("VmRSS"), statusKb("VmHWM"));
  fflush(stdout);
  pthread_barrier_wait(&g_measured);
  for (int i = 0; i < g_threads; i++) pthread_join(t[i], NULL);
  free(t);
  return 0;
}
