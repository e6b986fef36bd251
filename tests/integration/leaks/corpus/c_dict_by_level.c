/* Leak (dictionary keyed by level): a hash table of level statistics (static g_level_stats,
 * made by table_new) that stats_put adds each level's entry to, keyed by the level number, with
 * a 1 KiB heat map; nothing ever removes an entry.
 * Not a leak: a ring buffer of the last 64 frame times (frame_time_push overwrites in place). */
#include "game.h"

struct LevelStats {
  struct LevelStats* next; /* the bucket's chain */
  int level, kills, deaths;
  unsigned char* heatmap; /* GC_malloc_atomic, 1 KiB */
};
enum { kBuckets = 64 };
struct Table {
  struct LevelStats** buckets; /* kBuckets chains */
  size_t count;
};
static struct Table* g_level_stats; /* the leak */

struct FrameTimes {
  float times[64];
  int next;
};
static struct FrameTimes* g_frame_times;

NOINLINE static struct Table* table_new(void) {
  struct Table* t = (struct Table*)GC_malloc(sizeof(struct Table));
  t->buckets = (struct LevelStats**)GC_malloc(kBuckets * sizeof(struct LevelStats*));
  return t;
}

NOINLINE static struct LevelStats* stats_put(struct Table* t, int level) {
  struct LevelStats* s = (struct LevelStats*)GC_malloc(sizeof(struct LevelStats));
  s->level = level;
  s->heatmap = (unsigned char*)GC_malloc_atomic(1024);
  memset(s->heatmap, 0, 1024);
  size_t b = (size_t)level * 2654435761u % kBuckets;
  s->next = t->buckets[b];
  t->buckets[b] = s;
  ++t->count;
  return s;
}

static void frame_time_push(float ms) {
  g_frame_times->times[g_frame_times->next] = ms;
  g_frame_times->next = (g_frame_times->next + 1) % 64;
}

int main(int argc, char** argv) {
  GC_INIT();
  g_level_stats = table_new();
  g_frame_times = (struct FrameTimes*)GC_malloc_atomic(sizeof(struct FrameTimes));
  memset(g_frame_times, 0, sizeof(struct FrameTimes));
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    struct LevelStats* stats = stats_put(g_level_stats, n);
    for (int i = 0; i < 10; ++i) {
      sum += play_frames(n, 12);
      frame_time_push(16.0f + (float)rnd(4));
      stats->kills += (int)rnd(3);
      stats->heatmap[rnd(1024)]++;
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
