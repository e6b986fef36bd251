/* Not a leak (ring buffers): the replay recorder keeps the last 32 snapshots of the world (a
 * ring of pointers, static g_replay; record_snapshot replaces the oldest, which becomes
 * garbage), and the console keeps its last 16 lines (g_console, overwritten in place). Both are
 * full during the first level and stay the same size after. */
#include "game.h"

struct Snapshot {
  int level, frame;
  float* positions; /* GC_malloc_atomic, 512 bytes */
};
enum { kSnapshots = 32, kLines = 16 };
static struct {
  struct Snapshot* slots[kSnapshots];
  int next;
} g_replay;
static char* g_console[kLines]; /* GC_malloc_atomic, 96 bytes each, allocated once */
static int g_console_next;

NOINLINE static void record_snapshot(int level, int frame) {
  struct Snapshot* s = (struct Snapshot*)GC_malloc(sizeof(struct Snapshot));
  s->level = level;
  s->frame = frame;
  s->positions = (float*)GC_malloc_atomic(512);
  memset(s->positions, 0, 512);
  g_replay.slots[g_replay.next] = s; /* the one it replaces is garbage */
  g_replay.next = (g_replay.next + 1) % kSnapshots;
}

static void console_print(int level, int i) {
  if (!g_console[g_console_next]) g_console[g_console_next] = (char*)GC_malloc_atomic(96);
  snprintf(g_console[g_console_next], 96, "level %d: checkpoint %d", level, i);
  g_console_next = (g_console_next + 1) % kLines;
}

int main(int argc, char** argv) {
  GC_INIT();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    for (int f = 0; f < 40; ++f) {
      record_snapshot(n, f);
      if (f % 3 == 0) console_print(n, f);
      sum += play_frames(n, 3);
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
