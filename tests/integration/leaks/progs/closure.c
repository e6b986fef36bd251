/* Leak: deferred callbacks, each a closure capturing its level, queued and never run
 * (closure capturing a level).
 * Leak: a static list of every level's name (static list), smaller than the first.
 * Not a leak: a list of recent levels' logs grown at each level and cleared every third. */
#include "corpus.h"

struct Closure {
  int (*fn)(struct Closure*);
  struct Level* level; /* the captured level */
};
static struct Deferred {
  struct Closure** items;
  size_t count, capacity;
} g_deferred;

struct LogEntry {
  struct LogEntry* next;
  char* text; /* GC_malloc_atomic, 4 KiB */
};
static struct LogEntry* g_recent;
static int g_recent_count;

struct Name {
  struct Name* next;
  char* text; /* GC_malloc_atomic, 256 bytes */
};
static struct Name* g_names;

static int level_stats(struct Closure* c) { return c->level->score; }

__attribute__((noinline)) static void remember_name(int n) {
  struct Name* e = (struct Name*)GC_malloc(sizeof(struct Name));
  e->text = (char*)GC_malloc_atomic(256);
  snprintf(e->text, 256, "level %d", n);
  e->next = g_names;
  g_names = e;
}

__attribute__((noinline)) static void deferred_grow(struct Deferred* d) {
  size_t cap = d->capacity ? 2 * d->capacity : 2;
  struct Closure** items = (struct Closure**)GC_malloc(cap * sizeof(struct Closure*));
  if (d->count) memcpy(items, d->items, d->count * sizeof(struct Closure*));
  d->items = items;
  d->capacity = cap;
}

__attribute__((noinline)) static void defer_level_stats(struct Level* l) {
  struct Closure* c = (struct Closure*)GC_malloc(sizeof(struct Closure));
  c->fn = level_stats;
  c->level = l;
  if (g_deferred.count == g_deferred.capacity) deferred_grow(&g_deferred);
  g_deferred.items[g_deferred.count++] = c;
}

__attribute__((noinline)) static void log_level(int n) {
  if (g_recent_count == 3) { /* cleared every third level */
    g_recent = NULL;
    g_recent_count = 0;
  }
  struct LogEntry* e = (struct LogEntry*)GC_malloc(sizeof(struct LogEntry));
  e->text = (char*)GC_malloc_atomic(4096);
  snprintf(e->text, 4096, "level %d", n);
  e->next = g_recent;
  g_recent = e;
  ++g_recent_count;
}

int main(int argc, char** argv) {
  GC_INIT();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    heapman_event("level_start");
    struct Level* l = make_level(n);
    defer_level_stats(l);
    remember_name(n);
    log_level(n);
    sum += play_frames(l);
    end_level();
  }
  return sum == 0;
}
