/* Ground truth for thread stacks as roots when the collecting thread is another one: the main
 * thread and a worker each hold an object only in a local while they wait, and a third thread
 * collects. The program prints "main ADDRESS", "worker ADDRESS" and "gc N". The heap graph must
 * find each object reachable from its own thread's stack. (The main thread's stack bounds span its
 * whole RLIMIT_STACK reservation, mostly unmapped: the recorder once left its stack out here.) */
#define GC_THREADS
#include <gc/gc.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_started, g_go;

static void* worker(void* arg) {
  (void)arg;
  void* volatile its = GC_malloc(64);
  printf("worker %p\n", (void*)its);
  fflush(stdout);
  pthread_mutex_lock(&g_mutex);
  g_started = 1;
  pthread_cond_broadcast(&g_cond);
  while (!g_go) pthread_cond_wait(&g_cond, &g_mutex);
  pthread_mutex_unlock(&g_mutex);
  return its != NULL ? NULL : arg;
}

static void* collector(void* arg) {
  GC_gcollect();
  printf("gc %lu\n", (unsigned long)GC_get_gc_no());
  return arg;
}

int main(void) {
  GC_INIT();
  void* volatile mine = GC_malloc(64);
  printf("main %p\n", (void*)mine);
  fflush(stdout);
  pthread_t w, c;
  if (pthread_create(&w, NULL, worker, NULL) != 0) return 1;
  pthread_mutex_lock(&g_mutex);
  while (!g_started) pthread_cond_wait(&g_cond, &g_mutex);
  pthread_mutex_unlock(&g_mutex);
  if (pthread_create(&c, NULL, collector, NULL) != 0) return 1;
  pthread_join(c, NULL);
  pthread_mutex_lock(&g_mutex);
  g_go = 1;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_mutex);
  pthread_join(w, NULL);
  return mine == NULL;
}
