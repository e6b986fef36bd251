/* Leak (irregular steps): the kill feed, a static linked list (g_kill_feed) that record_kill
 * prepends to for every enemy killed and nothing ever trims. The kills per level follow
 * 3, 11, 1, 7, 1 (then again), so the leak grows by uneven steps, one of them three times
 * another's size.
 * Not a leak: the current level's enemies (an array replaced at each level_start). */
#include "game.h"

struct Kill {
  struct Kill* next;
  int level, enemy;
  char* weapon; /* GC_malloc_atomic, 48 bytes */
};
static struct Kill* g_kill_feed; /* the leak */

struct Enemy {
  float x, y;
  int hp;
};
static struct Enemy** g_enemies; /* replaced every level */
enum { kEnemies = 40 };

NOINLINE static void record_kill(int level, int enemy) {
  struct Kill* k = (struct Kill*)GC_malloc(sizeof(struct Kill));
  k->level = level;
  k->enemy = enemy;
  k->weapon = (char*)GC_malloc_atomic(48);
  snprintf(k->weapon, 48, "plasma-%d", (int)rnd(9));
  k->next = g_kill_feed;
  g_kill_feed = k;
}

NOINLINE static void spawn_wave(void) {
  g_enemies = (struct Enemy**)GC_malloc(kEnemies * sizeof(struct Enemy*));
  for (int i = 0; i < kEnemies; ++i) {
    g_enemies[i] = (struct Enemy*)GC_malloc(sizeof(struct Enemy));
    g_enemies[i]->hp = 10 + (int)rnd(20);
  }
}

int main(int argc, char** argv) {
  static const int kKills[] = {3, 11, 1, 7, 1};
  GC_INIT();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    spawn_wave();
    for (int k = 0; k < kKills[n % 5]; ++k) {
      sum += play_frames(n, 12);
      record_kill(n, k);
    }
    sum += play_frames(n, 60);
    sum += level_finish(n);
  }
  return sum == 0;
}
