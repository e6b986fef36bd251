/* Ground truth for the bdwgc layer: which objects each collection really freed.
 *
 * usage: rec_gc_truth THREADS OBJECTS_PER_THREAD
 *
 * THREADS threads allocate through many libgc entry points (GC_malloc, GC_malloc_atomic,
 * GC_malloc_uncollectable, GC_malloc_many batches, GC_gcj_malloc, GC_malloc_explicitly_typed,
 * GC_strdup, GC_realloc, GC_debug_malloc, GC_debug_free) while collections run, keep about one object in ten
 * reachable for a while, give some a finalizer, and free some explicitly with GC_free.
 *
 * Every object that may die by collection gets a long weak link (GC_register_long_link): the
 * collector clears it only when the object is really reclaimed (after its finalizer ran, for a
 * finalizable one). The program's own collection-event callback (which the recorder must chain,
 * not replace) scans the links at GC_EVENT_END: a link cleared since the last scan means its
 * object was collected by that GC. Lines printed at exit:
 *   collected GC ADDRESS     one per object, the GC that freed it (GC_get_gc_no() at its END)
 *   allocs HEAP N            objects allocated per recorder heap kind name
 *   frees N                  explicit GC_free calls
 *   starts N                 GC_EVENT_START callbacks the program saw
 *   first_gc N               the number of the first of them (GC_INIT collects before)
 *   tracked N                objects with a weak link
 */
#define GC_THREADS
#include <gc/gc.h>
#include <gc/gc_gcj.h>
#include <gc/gc_mark.h>
#include <gc/gc_typed.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kNormal, kAtomic, kUncollectable, kGcj, kTyped, kHeaps };
static const char* const kHeapNames[kHeaps] = {"gc", "gc_atomic", "gc_uncollectable", "gcj",
                                               "gc_typed"};

/* Links live in malloc'd memory, which the collector does not scan. */
typedef struct {
  void* cell;      /* the weak link: cleared by the collector */
  uintptr_t addr;  /* the object's address as a number */
} Link;

typedef struct {
  Link* links;
  _Atomic size_t count; /* published after the link is registered */
  size_t cap;
  long allocs[kHeaps];
  long frees;
  unsigned seed;
} Worker;

static Worker* g_workers;
static int g_threads;
static long g_starts;
static size_t g_collectedCount, g_collectedCap;
static uintptr_t (*g_collected)[2]; /* (gc, address) */
static GC_descr g_typedDescr;
static struct {
  void* clazz;
  GC_word descr;
} g_vtable;

static void GC_CALLBACK onEvent(GC_EventType e) {
  if (e == GC_EVENT_START) ++g_starts;
  if (e != GC_EVENT_END) return;
  uintptr_t gc = GC_get_gc_no();
  for (int t = 0; t < g_threads; ++t) {
    Worker* w = &g_workers[t];
    size_t n = atomic_load_explicit(&w->count, memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
      Link* l = &w->links[i];
      if (l->cell || !l->addr) continue;
      if (g_collectedCount < g_collectedCap) {
        g_collected[g_collectedCount][0] = gc;
        g_collected[g_collectedCount][1] = l->addr;
        ++g_collectedCount;
      }
      l->addr = 0; /* reported */
    }
  }
}

static void GC_CALLBACK finalizer(void* obj, void* data) {
  (void)obj;
  (void)data;
}

static size_t track(Worker* w, void* p) {
  size_t i = atomic_load_explicit(&w->count, memory_order_relaxed);
  if (i == w->cap) abort();
  w->links[i].cell = (void*)(~(uintptr_t)p); /* any non-zero value; not a pointer to p */
  w->links[i].addr = (uintptr_t)p;
  /* The link names the collector's object (a GC_debug_* object starts before p). */
  if (GC_register_long_link(&w->links[i].cell, GC_base(p)) != GC_SUCCESS) abort();
  atomic_store_explicit(&w->count, i + 1, memory_order_release);
  return i;
}

static void untrack(Worker* w, size_t i, void* p) {
  if (w->links[i].addr != (uintptr_t)p || !w->links[i].cell) abort();
  GC_unregister_long_link(&w->links[i].cell);
  w->links[i].addr = 0;
}

static unsigned next(Worker* w) {
  w->seed = w->seed * 1103515245u + 12345u;
  return w->seed >> 8;
}

/* Reachable objects: a GC-allocated array in a root of this thread's stack frame. */
enum { kKeep = 256 };

static void* work(void* arg) {
  Worker* w = arg;
  long target = (long)(w->cap / 2);
  void** keep = GC_malloc(kKeep * sizeof(void*));
  size_t keepLink[kKeep] = {0}; /* the link index of each kept object */
  w->allocs[kNormal]++;
  track(w, keep);
  for (long i = 0; i < target;) {
    void* p = NULL;
    unsigned r = next(w) % 100;
    size_t size = 8 + next(w) % 200;
    if (r < 40) {
      p = GC_malloc(size);
      w->allocs[kNormal]++;
    } else if (r < 55) {
      p = GC_malloc_atomic(size);
      w->allocs[kAtomic]++;
    } else if (r < 60) {
      p = GC_gcj_malloc(64, &g_vtable);
      w->allocs[kGcj]++;
    } else if (r < 65) {
      p = GC_malloc_explicitly_typed(32, g_typedDescr);
      w->allocs[kTyped]++;
    } else if (r < 70) {
      p = GC_strdup("a string the program keeps or drops");
      w->allocs[kAtomic]++;
    } else if (r < 75) { /* a batch: every object of the list */
      void* list = GC_malloc_many(48);
      while (list && i < target) {
        void* q = list;
        list = GC_NEXT(list);
        GC_NEXT(q) = NULL;
        w->allocs[kNormal]++;
        size_t link = track(w, q);
        ++i;
        if (next(w) % 10 == 0) {
          unsigned k = next(w) % kKeep;
          keep[k] = q;
          keepLink[k] = link;
        }
      }
      while (list) { /* the rest of the list is dropped: collected later */
        void* q = list;
        list = GC_NEXT(list);
        w->allocs[kNormal]++;
        track(w, q);
      }
      continue;
    } else if (r < 80) { /* explicit free: never collected */
      void* q = GC_malloc(size);
      w->allocs[kNormal]++;
      GC_free(q);
      w->frees++;
      ++i;
      continue;
    } else if (r < 85) { /* realloc of a kept object, or a fresh one */
      unsigned slot = next(w) % kKeep;
      void* old = keep[slot];
      if (old && GC_size(old) <= 4096 && GC_get_kind_and_size(old, NULL) == 1 /* NORMAL */) {
        untrack(w, keepLink[slot], old);
        p = GC_realloc(old, GC_size(old) * 2 + 8);
        /* The recorder logs a realloc as the old object's free and the new one's allocation. */
        w->allocs[kNormal]++;
        w->frees++;
        size_t link = track(w, p);
        for (int k = 0; k < kKeep; ++k)
          if (keep[k] == old) {
            keep[k] = p;
            keepLink[k] = link;
          }
        ++i;
        continue;
      }
      p = GC_malloc(size);
      w->allocs[kNormal]++;
    } else if (r < 86) { /* the debug family: the program's pointer lies past a header */
      void* q = GC_debug_malloc(size, GC_EXTRAS);
      w->allocs[kNormal]++;
      if (next(w) % 3 == 0) {
        GC_debug_free(q);
        w->frees++;
        ++i;
        continue;
      }
      track(w, q); /* never kept: GC_realloc must not see a debug object */
      ++i;
      continue;
    } else if (r < 88) { /* uncollectable, freed explicitly soon after */
      void* q = GC_malloc_uncollectable(size);
      w->allocs[kUncollectable]++;
      GC_free(q);
      w->frees++;
      ++i;
      continue;
    } else {
      p = GC_malloc(size);
      w->allocs[kNormal]++;
      if (next(w) % 4 == 0) { /* finalizable: dies one collection after its finalizer ran */
        GC_register_finalizer(p, finalizer, NULL, NULL, NULL);
        track(w, p);
        ++i;
        continue;
      }
    }
    size_t link = track(w, p);
    ++i;
    if (next(w) % 10 == 0) {
      unsigned k = next(w) % kKeep;
      keep[k] = p;
      keepLink[k] = link;
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  g_threads = argc > 1 ? atoi(argv[1]) : 1;
  long perThread = argc > 2 ? atol(argv[2]) : 100000;
  GC_INIT();
  GC_allow_register_threads();
  GC_init_gcj_malloc(0, NULL);
  g_vtable.descr = 64 | GC_DS_LENGTH; /* scan the whole object */
  GC_word bitmap[1] = {0};
  GC_set_bit(bitmap, 0);
  g_typedDescr = GC_make_descriptor(bitmap, 1);
  g_workers = calloc((size_t)g_threads, sizeof(Worker));
  g_collectedCap = (size_t)(g_threads * perThread * 2 + 1000);
  g_collected = malloc(g_collectedCap * sizeof *g_collected);
  for (int t = 0; t < g_threads; ++t) {
    g_workers[t].cap = (size_t)perThread * 2;
    g_workers[t].links = calloc(g_workers[t].cap, sizeof(Link));
    g_workers[t].seed = 1234u + (unsigned)t;
  }
  GC_set_on_collection_event(onEvent);
  unsigned long firstGc = GC_get_gc_no() + 1; /* the first collection the callback sees */
  pthread_t* ids = malloc((size_t)g_threads * sizeof(pthread_t));
  for (int t = 0; t < g_threads; ++t) pthread_create(&ids[t], NULL, work, &g_workers[t]);
  for (int t = 0; t < g_threads; ++t) pthread_join(ids[t], NULL);
  /* Everything is garbage now: collect until the finalizable objects are gone too. */
  for (int round = 0; round < 4; ++round) {
    GC_gcollect();
    GC_invoke_finalizers();
  }
  long allocs[kHeaps] = {0}, frees = 0, tracked = 0;
  for (int t = 0; t < g_threads; ++t) {
    for (int h = 0; h < kHeaps; ++h) allocs[h] += g_workers[t].allocs[h];
    frees += g_workers[t].frees;
    tracked += (long)g_workers[t].count;
  }
  for (size_t i = 0; i < g_collectedCount; ++i)
    printf("collected %lu 0x%lx\n", (unsigned long)g_collected[i][0],
           (unsigned long)g_collected[i][1]);
  for (int h = 0; h < kHeaps; ++h) printf("allocs %s %ld\n", kHeapNames[h], allocs[h]);
  printf("frees %ld\nstarts %ld\nfirst_gc %lu\ntracked %ld\n", frees, g_starts, firstGc, tracked);
  return 0;
}
