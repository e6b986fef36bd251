/* Not a leak (warm-up growth that stops early): a glyph cache (static g_glyphs, a table of 128
 * slots, load_glyph rasterizing a 256-byte bitmap on first use) and a shader cache (g_shaders,
 * compile_shader) both grow during the first three levels, which introduce new letters and
 * materials, and then stay the same: later levels use only what the first three did. */
#include "game.h"

static unsigned char* g_glyphs[128]; /* GC_malloc_atomic, 256 bytes each, made on first use */

struct Shader {
  struct Shader* next;
  int material;
  unsigned char* code; /* GC_malloc_atomic, 1 KiB */
};
static struct Shader* g_shaders;

NOINLINE static unsigned char* load_glyph(int c) {
  if (!g_glyphs[c]) {
    g_glyphs[c] = (unsigned char*)GC_malloc_atomic(256);
    memset(g_glyphs[c], c, 256);
  }
  return g_glyphs[c];
}

NOINLINE static struct Shader* compile_shader(int material) {
  for (struct Shader* s = g_shaders; s; s = s->next)
    if (s->material == material) return s;
  struct Shader* s = (struct Shader*)GC_malloc(sizeof(struct Shader));
  s->material = material;
  s->code = (unsigned char*)GC_malloc_atomic(1024);
  memset(s->code, material, 1024);
  s->next = g_shaders;
  g_shaders = s;
  return s;
}

/* The level's text: levels 0-2 bring in new letters, later ones reuse them. */
NOINLINE static long draw_text(int level) {
  static const char* kText[] = {"the forest", "cave of bats", "snowy peaks and ruins"};
  const char* text = kText[level < 3 ? level : (int)rnd(3)];
  long sum = 0;
  for (const char* c = text; *c; ++c) sum += load_glyph(*c & 127)[0];
  return sum;
}

int main(int argc, char** argv) {
  GC_INIT();
  long sum = 0;
  for (int n = 0; n < levels_of(argc, argv); ++n) {
    level_begin(n);
    for (int m = 0; m < 4; ++m) {
      int material = n < 3 ? n * 4 + m : (int)rnd(12);
      sum += compile_shader(material)->code[0];
      sum += draw_text(n) + play_frames(n, 30);
    }
    sum += level_finish(n);
  }
  return sum == 0;
}
