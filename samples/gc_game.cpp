// gc_game: a small game loop whose objects live on the Boehm collector (libgc), for `heaprec run`
// to record. Read it in five minutes:
//
//   - levels: heapman_event("level_start") / ("level_end") bracket each level;
//   - frames: heapman_frame() once per frame;
//   - entities (GC_malloc), their names (GC_strdup, pointer-free) and components (GC_gcj_malloc,
//     typed by a vtable), spawned during a level and dropped at its end: the collector frees them;
//   - a level cache that is never trimmed, rooted in an uncollectable object: it leaks across
//     levels, and the growth diff between levels shows it;
//   - per-frame temporary strings (GC_malloc_atomic): churn that the collector keeps cleaning;
//   - an audio thread mixing sound buffers into a small ring;
//   - with a build number of at least leak-from (17 unless given), a replay recorder that keeps
//     every frame's input record forever: a leak that a build switched on, for the tests of
//     `heapman trend` and `heapman check` across builds. Without a build number, no such leak.
//
//   gc_game [levels] [frames-per-level] [build [leak-from]]
#define GC_THREADS
#include <gc/gc.h>
#include <gc/gc_gcj.h>
#include <gc/gc_mark.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "heapman.h"

namespace {

struct Component {      // allocated with GC_gcj_malloc: its first word points to a vtable
  const void* vtable;
  float values[6];
};

struct Entity {
  Entity* next;         // the level's entity list
  char* name;           // GC_strdup
  Component* physics;   // GC_gcj_malloc
  float x, y;
};

struct CacheEntry {     // one level asset, kept forever: the leak
  CacheEntry* next;
  char* key;
  unsigned char* pixels;  // GC_malloc_atomic: no pointers inside
};

struct Cache {          // GC_malloc_uncollectable: a root the collector never frees
  CacheEntry* head;
  long entries;
};

// The gcj vtable: GC_gcj_malloc reads the object's mark descriptor from its second word.
struct VTable {
  const char* name;
  GC_word descriptor;
};
VTable gComponentVTable = {"Component", sizeof(Component) | GC_DS_LENGTH};

struct InputRecord {    // one frame's input, kept by the replay recorder (the builds' leak)
  InputRecord* next;
  int level, frame;
  char pad[240];
};

Cache* gCache;
InputRecord** gReplay;  // GC_malloc_uncollectable: the replay recorder's list, a root
bool gReplayLeak = false;
std::atomic<bool> gRunning{true};

__attribute__((noinline)) unsigned char* loadAsset(const char* key) {
  for (CacheEntry* e = gCache->head; e; e = e->next)
    if (std::strcmp(e->key, key) == 0) return e->pixels;
  auto* e = static_cast<CacheEntry*>(GC_malloc(sizeof(CacheEntry)));
  e->key = GC_strdup(key);
  e->pixels = static_cast<unsigned char*>(GC_malloc_atomic(16384));
  e->next = gCache->head;
  gCache->head = e;
  ++gCache->entries;
  return e->pixels;
}

__attribute__((noinline)) Entity* spawnEntity(int level, int id, Entity* next) {
  auto* e = static_cast<Entity*>(GC_malloc(sizeof(Entity)));
  char name[48];
  std::snprintf(name, sizeof name, "enemy-%d-%d", level, id);
  e->name = GC_strdup(name);
  e->physics = static_cast<Component*>(GC_gcj_malloc(sizeof(Component), &gComponentVTable));
  e->x = static_cast<float>(id);
  e->next = next;
  return e;
}

__attribute__((noinline)) void recordInput(int level, int frame) {
  auto* r = static_cast<InputRecord*>(GC_malloc(sizeof(InputRecord)));
  r->level = level;
  r->frame = frame;
  r->next = *gReplay;
  *gReplay = r;
}

// A per-frame string for the HUD: garbage by the next frame.
__attribute__((noinline)) char* hudText(int frame, int alive) {
  auto* s = static_cast<char*>(GC_malloc_atomic(64));
  std::snprintf(s, 64, "frame %d: %d enemies", frame, alive);
  return s;
}

__attribute__((noinline)) long playLevel(int level, int frames) {
  heapman_event("level_start");
  Entity* entities = nullptr;
  int alive = 0;
  long checksum = 0;
  for (int f = 0; f < frames; ++f) {
    for (int i = 0; i < 8; ++i) entities = spawnEntity(level, alive++, entities);
    char key[32];
    std::snprintf(key, sizeof key, "level%d/tile%d", level, f % 40);
    checksum += loadAsset(key)[0];
    for (Entity* e = entities; e; e = e->next) e->x += 0.5f;
    checksum += static_cast<long>(std::strlen(hudText(f, alive)));
    if (gReplayLeak) recordInput(level, f);
    heapman_frame();
  }
  heapman_event("level_end");
  return checksum + alive;  // the entity list dies here: the next collections free it
}

void* audioThread(void*) {
  // volatile: the ring is only written, and without it the compiler drops the array (-O2 kept
  // the newest buffer in a register only), so the buffers would not be held as the game means.
  void* volatile ring[16] = {};
  for (unsigned i = 0; gRunning.load(std::memory_order_relaxed); ++i) {
    ring[i % 16] = GC_malloc_atomic(2048);  // a mixed sound buffer; the oldest one dies
    std::memset(ring[i % 16], static_cast<int>(i), 2048);
    struct timespec ts = {0, 200000};
    nanosleep(&ts, nullptr);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  int levels = argc > 1 ? std::atoi(argv[1]) : 3;
  int frames = argc > 2 ? std::atoi(argv[2]) : 300;
  int build = argc > 3 ? std::atoi(argv[3]) : 0;
  int leakFrom = argc > 4 ? std::atoi(argv[4]) : 17;
  GC_INIT();
  GC_init_gcj_malloc(0, nullptr);
  gCache = static_cast<Cache*>(GC_malloc_uncollectable(sizeof(Cache)));
  if (argc > 3 && build >= leakFrom) {
    gReplay = static_cast<InputRecord**>(GC_malloc_uncollectable(sizeof(InputRecord*)));
    gReplayLeak = true;
  }
  pthread_t audio;
  pthread_create(&audio, nullptr, audioThread, nullptr);
  long checksum = 0;
  for (int level = 1; level <= levels; ++level) checksum += playLevel(level, frames);
  gRunning = false;
  pthread_join(audio, nullptr);
  GC_gcollect();
  std::printf("gc_game: %d levels x %d frames, %ld cached assets, checksum %ld\n", levels, frames,
              gCache->entries, checksum);
  // How often the collector ran depends on timing (the audio thread allocates on a clock).
  std::printf("gc_game: %lu collections\n", static_cast<unsigned long>(GC_get_gc_no()));
  return 0;
}
