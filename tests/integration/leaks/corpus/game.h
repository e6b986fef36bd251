/* The scored leak corpus's common part for the C programs on bdwgc: a game of levels, each
 * between heapman_event("level_start") and heapman_event("level_end") and followed by a short
 * results screen. Every frame makes garbage (a particle burst, HUD text, path-finding scratch),
 * about half a megabyte a level, so the collector runs several times a level on its own. Nothing here
 * calls GC_gcollect(): the collection that `heaprec run --ram-dumps event:level_end` dumps falls
 * wherever the allocation volume puts it, as in a real game.
 *
 * Deterministic: one xorshift generator with a fixed seed, no clocks. Each program prints
 * nothing; `prog [levels]` (default 10). What each program leaks (or does not) is said at its
 * top and in manifest.txt, which tests/integration/leaks/score_corpus.py scores against. */
#ifndef HEAPMAN_LEAK_CORPUS_GAME_H
#define HEAPMAN_LEAK_CORPUS_GAME_H

#define GC_THREADS
#include <gc/gc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapman.h"

#define NOINLINE __attribute__((noinline))

static uint32_t g_rng = 0x2545f491u;

/* A number in [0, n). */
static inline uint32_t rnd(uint32_t n) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 17;
  g_rng ^= g_rng << 5;
  return g_rng % n;
}

struct Particle {
  struct Particle* next;
  float x, y, vx, vy;
};

/* One frame's garbage: a particle burst (a linked list), a HUD line, path-finding scratch. */
NOINLINE static long frame_garbage(int level, int frame) {
  struct Particle* burst = NULL;
  int n = 8 + (int)rnd(16);
  for (int i = 0; i < n; ++i) {
    struct Particle* p = (struct Particle*)GC_malloc(sizeof(struct Particle));
    p->x = (float)i;
    p->vy = (float)frame;
    p->next = burst;
    burst = p;
  }
  char* hud = (char*)GC_malloc_atomic(64 + rnd(192));
  snprintf(hud, 64, "level %d frame %d score %u", level, frame, rnd(100000));
  size_t scratch_len = 1024 + rnd(4096);
  unsigned char* scratch = (unsigned char*)GC_malloc_atomic(scratch_len);
  memset(scratch, frame & 0xff, scratch_len);
  long sum = (long)strlen(hud) + scratch[scratch_len / 2];
  for (struct Particle* p = burst; p; p = p->next) sum += (long)p->x;
  return sum;
}

/* `frames` frames of play, each with its garbage and a frame mark. */
NOINLINE static long play_frames(int level, int frames) {
  long sum = 0;
  for (int f = 0; f < frames; ++f) {
    sum += frame_garbage(level, f);
    heapman_frame();
  }
  return sum;
}

static inline void level_begin(int level) {
  (void)level;
  heapman_event("level_start");
}

/* level_end, then the results screen (its garbage too). */
static inline long level_finish(int level) {
  heapman_event("level_end");
  return play_frames(level, 20 + (int)rnd(20));
}

static inline int levels_of(int argc, char** argv) { return argc > 1 ? atoi(argv[1]) : 10; }

#endif
