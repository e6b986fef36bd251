/* Leak held by the finalization queue: every level loads 4 sounds (load_sound: a Sound with a
 * 2 KiB sample buffer) with a finalizer that would release its voice, and drops them when the
 * level ends. The game asked bdwgc to run finalizers on demand (GC_set_finalize_on_demand) but
 * calls GC_invoke_finalizers only on the way back to the main menu, after the last level: until
 * then each collection moves the dropped sounds to bdwgc's queue of objects ready for
 * finalization, which keeps them (and their buffers) alive.
 * Not a leak: the voice pool, 16 voices made at start-up and reused. */
#include "game.h"

struct Voice {
  int busy;
  float gain;
};
struct Sound {
  int id;
  struct Voice* voice;
  unsigned char* samples; /* GC_malloc_atomic, 2 KiB */
};
enum { kVoices = 16 };
static struct Voice* g_voices[kVoices]; /* the pool */
static int g_released;

static void close_sound(void* obj, void* data) {
  (void)data;
  struct Sound* s = (struct Sound*)obj;
  if (s->voice) s->voice->busy = 0;
  ++g_released;
}

NOINLINE static struct Sound* load_sound(int id) {
  struct Sound* s = (struct Sound*)GC_malloc(sizeof(struct Sound));
  s->id = id;
  s->samples = (unsigned char*)GC_malloc_atomic(2048);
  memset(s->samples, id & 0xff, 2048);
  s->voice = g_voices[id % kVoices];
  s->voice->busy = 1;
  GC_register_finalizer(s, close_sound, NULL, NULL, NULL);
  return s;
}

int main(int argc, char** argv) {
  GC_INIT();
  GC_set_finalize_on_demand(1);
  for (int i = 0; i < kVoices; ++i) g_voices[i] = (struct Voice*)GC_malloc(sizeof(struct Voice));
  long sum = 0;
  int levels = levels_of(argc, argv);
  for (int n = 0; n < levels; ++n) {
    level_begin(n);
    struct Sound* sounds[4];
    for (int i = 0; i < 4; ++i) sounds[i] = load_sound(n * 4 + i);
    for (int i = 0; i < 4; ++i) sum += play_frames(n, 30) + sounds[i]->samples[i];
    sum += level_finish(n);
  }
  GC_invoke_finalizers(); /* the main menu */
  return sum + g_released == 0;
}
