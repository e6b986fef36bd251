/* Three leaks under one holder: the World (static g_world) keeps
 *   - spawns: a linked list of spawn records, 4 a level from log_spawn;
 *   - chat: a growable array of chat lines (chat_grow), 6 a level from chat_append (128-byte
 *     strings);
 *   - pickups: a linked list of 1 KiB pickups, 1 a level from place_pickup;
 * none of which is ever trimmed.
 * Not a leak: the World's current-level enemy list, replaced every level. */
#include "game.h"

struct Spawn {
  struct Spawn* next;
  int level, kind;
  float x, y;
};
struct Pickup {
  struct Pickup* next;
  unsigned char* model; /* GC_malloc_atomic, 1 KiB */
};
struct Enemy {
  struct Enemy* next;
  int hp;
};
struct World {
  struct Spawn* spawns;   /* leak 1 */
  char** chat;            /* leak 2 */
  size_t chat_count, chat_capacity;
  struct Pickup* pickups; /* leak 3 */
  struct Enemy* enemies;  /* the current level's: not a leak */
};
static struct World* g_world;

NOINLINE static void log_spawn(struct World* w, int level, int kind) {
  struct Spawn* s = (struct Spawn*)GC_malloc(sizeof(struct Spawn));
  s->level = level;
  s->kind = kind;
  s->next = w->spawns;
  w->spawns = s;
}

NOINLINE static void chat_grow(struct World* w) {
  size_t cap = w->chat_capacity ? 2 * w->chat_capacity : 8;
  char** lines = (char**)GC_malloc(cap * sizeof(char*));
  if (w->chat_count) memcpy(lines, w->chat, w->chat_count * sizeof(char*));
  w->chat = lines;
  w->chat_capacity = cap;
}

NOINLINE static void chat_append(struct World* w, int level, int i) {
  char* line = (char*)GC_malloc_atomic(128);
  snprintf(line, 128, "[level %d] player%u: gg %d", level, rnd(8), i);
  if (w->chat_count == w->chat_capacity) chat_grow(w);
  w->chat[w->chat_count++] = line;
}

NOINLINE static void place_pickup(struct World* w) {
  struct Pickup* p = (struct Pickup*)GC_malloc(sizeof(struct Pickup));
  p->model = (unsigned char*)GC_malloc_atomic(1024);
  memset(p->model, 7, 1024);
  p->next = w->pickups;
  w->pickups = p;
}

NOINLINE static void spawn_enemies(struct World* w, int level) {
  w->enemies = NULL;
  for (int i = 0; i < 30; ++i) {
    struct Enemy* e = (struct Enemy*)GC_malloc(sizeof(struct Enemy));
    e->hp = 5 + level;
    e->next = w->enemies;
    w->enemies = e;
  }
}

int main(int argc, char** argv) {
  GC_INIT();
  g_world = (struct World*)GC_malloc(sizeof(struct World));
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    spawn_enemies(g_world, n);
    place_pickup(g_world);
    for (int i = 0; i < 6; ++i) {
      sum += play_frames(n, 15);
      if (i < 4) log_spawn(g_world, n, i);
      chat_append(g_world, n, i);
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
