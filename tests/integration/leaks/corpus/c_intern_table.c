/* Leak (string intern table): intern_string keeps one copy of every distinct string in a
 * static hash set (g_intern_table). The HUD interns the names of the level's enemies, which
 * are new at every level ("grunt-3-7"), so the table gains 12 strings a level, forever.
 * Not a leak: the strings interned again at every level (weapon names), found, not added. */
#include "game.h"

struct Interned {
  struct Interned* next;
  unsigned hash;
  char* text; /* GC_malloc_atomic */
};
enum { kBuckets = 256 };
static struct Interned** g_intern_table; /* the leak: kBuckets chains */

static unsigned hash_of(const char* s) {
  unsigned h = 2166136261u;
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

NOINLINE static const char* intern_string(const char* s) {
  unsigned h = hash_of(s);
  struct Interned** chain = &g_intern_table[h % kBuckets];
  for (struct Interned* e = *chain; e; e = e->next)
    if (e->hash == h && strcmp(e->text, s) == 0) return e->text;
  struct Interned* e = (struct Interned*)GC_malloc(sizeof(struct Interned));
  size_t len = strlen(s) + 1;
  e->text = (char*)GC_malloc_atomic(len < 32 ? 32 : len);
  memcpy(e->text, s, len);
  e->hash = h;
  e->next = *chain;
  *chain = e;
  return e->text;
}

int main(int argc, char** argv) {
  static const char* kWeapons[] = {"rifle", "shotgun", "rocket", "knife"};
  GC_INIT();
  g_intern_table = (struct Interned**)GC_malloc(kBuckets * sizeof(struct Interned*));
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    for (int i = 0; i < 12; ++i) {
      char* name = (char*)GC_malloc_atomic(64); /* garbage once interned */
      snprintf(name, 64, "grunt-%d-%d-of-the-%s-squad", n, i, i % 2 ? "red" : "blue");
      const char* label = intern_string(name);
      sum += (long)strlen(intern_string(kWeapons[i % 4])) + label[0];
      sum += play_frames(n, 10);
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
