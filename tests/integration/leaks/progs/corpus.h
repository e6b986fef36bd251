/* The leak corpus's common part for the bdwgc programs: a level with its enemies, played between
 * heapman_event("level_start") and heapman_event("level_end"); a collection right after each
 * level_end, so that `heaprec run --ram-dumps event:level_end` dumps the heap there.
 *
 * Each program plants leaks and non-leaks of one kind (tests/integration/leaks/leaks_test.cpp
 * says which) and prints nothing; `prog [levels]` (default 6). */
#ifndef HEAPMAN_LEAK_CORPUS_H
#define HEAPMAN_LEAK_CORPUS_H

#define GC_THREADS
#include <gc/gc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapman.h"

enum { kEnemies = 50 };

struct Enemy {
  float x, y;
  char* name; /* GC_malloc_atomic */
};

struct Level {
  int number;
  int score;
  struct Enemy** enemies; /* kEnemies of them */
};

__attribute__((noinline)) static struct Enemy* spawn_enemy(int level, int i) {
  struct Enemy* e = (struct Enemy*)GC_malloc(sizeof(struct Enemy));
  e->name = (char*)GC_malloc_atomic(24);
  snprintf(e->name, 24, "enemy-%d-%d", level, i);
  e->x = (float)i;
  return e;
}

__attribute__((noinline)) static struct Level* make_level(int number) {
  struct Level* l = (struct Level*)GC_malloc(sizeof(struct Level));
  l->number = number;
  l->enemies = (struct Enemy**)GC_malloc(kEnemies * sizeof(struct Enemy*));
  for (int i = 0; i < kEnemies; ++i) l->enemies[i] = spawn_enemy(number, i);
  return l;
}

/* Frames: per-frame garbage the collector cleans. */
__attribute__((noinline)) static long play_frames(struct Level* l) {
  long sum = 0;
  for (int f = 0; f < 100; ++f) {
    char* hud = (char*)GC_malloc_atomic(64);
    snprintf(hud, 64, "level %d frame %d", l->number, f);
    sum += (long)strlen(hud);
    l->enemies[f % kEnemies]->x += 1.0f;
  }
  l->score += (int)sum;
  return sum;
}

static void end_level(void) {
  heapman_event("level_end");
  GC_gcollect();
}

static int levels_of(int argc, char** argv) { return argc > 1 ? atoi(argv[1]) : 6; }

#endif
