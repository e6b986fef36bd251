/* Leak (one small node per level amid churn): save_checkpoint prepends one 48-byte node to a
 * static list (g_checkpoints) at every level, never trimmed, while each level streams about
 * 3 MB of textures and audio through short-lived buffers (stream_assets) besides the frames'
 * garbage. The leak is 48 bytes a level.
 * Not a leak: the streamed buffers, each dropped after use. */
#include "game.h"

struct Checkpoint { /* 48 bytes, a multiple of bdwgc's 16-byte granule */
  struct Checkpoint* next;
  int level, frame, hp, ammo;
  float x, y, z, yaw;
  long long tick;
};
static struct Checkpoint* g_checkpoints; /* the leak */
static long long g_tick;

NOINLINE static void save_checkpoint(int level) {
  struct Checkpoint* c = (struct Checkpoint*)GC_malloc(sizeof(struct Checkpoint));
  c->level = level;
  c->tick = ++g_tick;
  c->x = (float)rnd(100);
  c->next = g_checkpoints;
  g_checkpoints = c;
}

/* About 3 MB a level: 48 buffers of 16-112 KiB, each touched and dropped. */
NOINLINE static long stream_assets(int level) {
  long sum = 0;
  for (int i = 0; i < 48; ++i) {
    size_t len = (size_t)(16 + rnd(97)) * 1024;
    unsigned char* buf = (unsigned char*)GC_malloc_atomic(len);
    memset(buf, level + i, len);
    sum += buf[len - 1];
    if (i % 8 == 0) sum += play_frames(level, 4);
  }
  return sum;
}

int main(int argc, char** argv) {
  _Static_assert(sizeof(struct Checkpoint) == 48, "the leak's node is 48 bytes");
  GC_INIT();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    sum += stream_assets(n);
    save_checkpoint(n);
    sum += play_frames(n, 60);
    sum += level_finish(n);
  }
  return sum == 0;
}
