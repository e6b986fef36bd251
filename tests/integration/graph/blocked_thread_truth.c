/* Ground truth for the stack of a thread in a blocking section (GC_do_blocking, as guile's
 * threads are while they wait): the collector does not suspend such a thread, yet it scans its
 * stack from where it entered the section, so an object held only by a local of a frame above
 * that point stays alive. A worker allocates one object, keeps it only in a local, and waits
 * inside GC_do_blocking while the main thread collects. Prints "worker ADDRESS" and "gc N". */
#define GC_THREADS
#include <gc/gc.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_waiting, g_go;

static void* wait_for_go(void* arg) {
  pthread_mutex_lock(&g_mutex);
  g_waiting = 1;
  pthread_cond_broadcast(&g_cond);
  while (!g_go) pthread_cond_wait(&g_cond, &g_mutex);
  pthread_mutex_unlock(&g_mutex);
  return arg;
}

static void* worker(void* arg) {
  void* volatile its = GC_malloc(64);
  printf("worker %p\n", (void*)its);
  fflush(stdout);
  GC_do_blocking(wait_for_go, NULL);
  return its != NULL ? NULL : arg;
}

int main(void) {
  GC_INIT();
  pthread_t w;
  if (pthread_create(&w, NULL, worker, NULL) != 0) return 1;
  pthread_mutex_lock(&g_mutex);
  while (!g_waiting) pthread_cond_wait(&g_cond, &g_mutex);
  pthread_mutex_unlock(&g_mutex);
  GC_gcollect();
  printf("gc %lu\n", (unsigned long)GC_get_gc_no());
  fflush(stdout);
  pthread_mutex_lock(&g_mutex);
  g_go = 1;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_mutex);
  pthread_join(w, NULL);
  return 0;
}
