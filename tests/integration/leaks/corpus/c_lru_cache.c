/* Not a leak (bounded cache): a texture cache (static g_textures) of at most 12 textures, each
 * a 4 KiB pixel buffer, in least-recently-used order. Each level asks for 6 textures out of a
 * set that drifts from level to level, so it fills up during the first levels and then evicts
 * one texture for every one it loads: flat from there on. */
#include "game.h"

struct Texture {
  struct Texture *prev, *next; /* most recently used first */
  int id;
  unsigned char* pixels; /* GC_malloc_atomic, 4 KiB */
};
enum { kCapacity = 12 };
static struct {
  struct Texture *head, *tail;
  int count;
} g_textures;

static void unlink_texture(struct Texture* t) {
  if (t->prev) t->prev->next = t->next; else g_textures.head = t->next;
  if (t->next) t->next->prev = t->prev; else g_textures.tail = t->prev;
  t->prev = t->next = NULL;
}

static void push_front(struct Texture* t) {
  t->next = g_textures.head;
  if (g_textures.head) g_textures.head->prev = t;
  g_textures.head = t;
  if (!g_textures.tail) g_textures.tail = t;
}

NOINLINE static struct Texture* load_texture(int id) {
  struct Texture* t = (struct Texture*)GC_malloc(sizeof(struct Texture));
  t->id = id;
  t->pixels = (unsigned char*)GC_malloc_atomic(4096);
  memset(t->pixels, id & 0xff, 4096);
  return t;
}

NOINLINE static struct Texture* texture_get(int id) {
  for (struct Texture* t = g_textures.head; t; t = t->next)
    if (t->id == id) {
      unlink_texture(t);
      push_front(t);
      return t;
    }
  if (g_textures.count == kCapacity) {
    unlink_texture(g_textures.tail); /* evicted: garbage now */
    --g_textures.count;
  }
  struct Texture* t = load_texture(id);
  push_front(t);
  ++g_textures.count;
  return t;
}

int main(int argc, char** argv) {
  GC_INIT();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    for (int i = 0; i < 6; ++i) {
      sum += texture_get(n * 3 + i)->pixels[i];
      sum += play_frames(n, 18);
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
