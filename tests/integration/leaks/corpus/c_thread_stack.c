/* Leak held only by a thread's stack: the AI worker thread's loop (ai_worker_loop) keeps every
 * path it planned in a local linked list (`history`), "for debugging", and never drops it. The
 * main thread posts one path job per level and waits for it; plan_path allocates each result (a
 * node and a 768-byte waypoint array). Nothing but the worker's stack points to the list.
 * Not a leak: the worker's per-job scratch grid (garbage at once). */
#include <pthread.h>

#include "game.h"

struct PathResult {
  struct PathResult* next;
  int level, length;
  float* waypoints; /* GC_malloc_atomic, 768 bytes */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_job = -1;     /* the level to plan for; -1: none; -2: quit */
static int g_done = 0;     /* jobs finished */
static long g_path_total;  /* read by the main thread */

NOINLINE static struct PathResult* plan_path(int level) {
  unsigned char* grid = (unsigned char*)GC_malloc_atomic(16384); /* scratch */
  memset(grid, level, 16384);
  struct PathResult* r = (struct PathResult*)GC_malloc(sizeof(struct PathResult));
  r->level = level;
  r->length = 64 + grid[level];
  r->waypoints = (float*)GC_malloc_atomic(768);
  memset(r->waypoints, 0, 768);
  return r;
}

NOINLINE static void* ai_worker_loop(void* arg) {
  (void)arg;
  struct PathResult* history = NULL; /* the leak: only this local holds it */
  long total = 0;
  for (;;) {
    pthread_mutex_lock(&g_lock);
    while (g_job == -1) pthread_cond_wait(&g_cond, &g_lock);
    int job = g_job;
    g_job = -1;
    pthread_mutex_unlock(&g_lock);
    if (job == -2) break;
    struct PathResult* r = plan_path(job);
    r->next = history;
    history = r;
    for (struct PathResult* p = history; p; p = p->next) total += p->length;
    pthread_mutex_lock(&g_lock);
    g_path_total = total;
    ++g_done;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
  }
  return NULL;
}

static void post_job(int job, int wait_for) {
  pthread_mutex_lock(&g_lock);
  g_job = job;
  pthread_cond_broadcast(&g_cond);
  while (wait_for >= 0 && g_done < wait_for) pthread_cond_wait(&g_cond, &g_lock);
  pthread_mutex_unlock(&g_lock);
}

int main(int argc, char** argv) {
  GC_INIT();
  pthread_t worker; /* GC_THREADS: pthread_create is bdwgc's, which registers the thread */
  if (pthread_create(&worker, NULL, ai_worker_loop, NULL) != 0) return 1;
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    sum += play_frames(n, 60);
    post_job(n, n + 1);
    sum += play_frames(n, 60) + g_path_total;
    sum += level_finish(n);
  }
  post_job(-2, -1);
  pthread_join(worker, NULL);
  return sum == 0;
}
