/* Not a leak (pool): a bullet pool of 96 bullets made at start-up (make_pool) and a free list;
 * each level fires 40-90 bullets (take_bullet) and every bullet comes back when it hits
 * (give_bullet). A returned bullet still points to the enemy it hit last (a stale pointer), so
 * the pool keeps some enemies of recent levels alive: a bounded set, never more than 96.
 * Not a leak: each level's enemies, replaced at every level. */
#include "game.h"

struct Enemy {
  float x, y;
  int hp;
  char* name; /* GC_malloc_atomic, 32 bytes */
};
struct Bullet {
  struct Bullet* next_free;
  float x, y, dx, dy;
  struct Enemy* target; /* stale once the bullet is back */
};
enum { kPool = 96, kEnemies = 30 };
static struct Bullet* g_free_bullets;
static struct Enemy** g_enemies;

NOINLINE static void make_pool(void) {
  for (int i = 0; i < kPool; ++i) {
    struct Bullet* b = (struct Bullet*)GC_malloc(sizeof(struct Bullet));
    b->next_free = g_free_bullets;
    g_free_bullets = b;
  }
}

static struct Bullet* take_bullet(void) {
  struct Bullet* b = g_free_bullets;
  g_free_bullets = b->next_free;
  b->next_free = NULL;
  return b;
}

static void give_bullet(struct Bullet* b) {
  b->next_free = g_free_bullets;
  g_free_bullets = b;
}

NOINLINE static void spawn_enemies(int level) {
  g_enemies = (struct Enemy**)GC_malloc(kEnemies * sizeof(struct Enemy*));
  for (int i = 0; i < kEnemies; ++i) {
    struct Enemy* e = (struct Enemy*)GC_malloc(sizeof(struct Enemy));
    e->hp = 3;
    e->name = (char*)GC_malloc_atomic(32);
    snprintf(e->name, 32, "drone-%d-%d", level, i);
    g_enemies[i] = e;
  }
}

int main(int argc, char** argv) {
  GC_INIT();
  make_pool();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    spawn_enemies(n);
    int shots = 40 + (int)rnd(51);
    struct Bullet* flying[8];
    for (int s = 0; s < shots; s += 8) {
      for (int i = 0; i < 8; ++i) {
        flying[i] = take_bullet();
        flying[i]->target = g_enemies[rnd(kEnemies)];
      }
      sum += play_frames(n, 3);
      for (int i = 0; i < 8; ++i) {
        sum += --flying[i]->target->hp;
        give_bullet(flying[i]);
      }
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
