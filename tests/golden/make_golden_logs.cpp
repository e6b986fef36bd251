// Writes the golden tests' logs with the real LogWriter, deterministically (no clocks, no
// library random numbers):
//   game.hml      a bdwgc + managed + native game: 3 levels, 6 GCs, frames, types, a Lost record
//   game_b.hml    the same game, "next build": more bullets, fewer textures (for compare)
//   cut.hml       game.hml cut at 55% (a recorder that died)
//   wrappers.hml  allocations through the allocation wrappers of libiberty, ECL, guile, sqlite and
//                 CPython (frames named by MethodDefs, so no symbols are needed): blame must
//                 charge their callers
//   corrupt_address.hml, corrupt_stack.hml
//                 a chunk of good records, then one with a record no log may hold (an allocation
//                 above 2^48, a stack node id far beyond the nodes before it): verify and the
//                 queries refuse it alike (exit 1), the queries answering over the first chunk
//   make_golden_logs DIR
#include <cstdio>
#include <string>
#include <vector>

#include "heapman/logformat/writer.h"

using namespace heapman::log;

namespace {

// Frames: the game module (module+offset names without symbols), libc and libgc leaves (which
// the default exclusion list skips), and managed methods.
constexpr uint64_t kGame = 0x400000, kLibc = 0x7f0000000000, kLibgc = 0x7f1000000000;

struct Game {
  MemorySink sink;
  LogWriter w;
  uint64_t seq = 0, time = 0;
  uint32_t rng = 12345;
  bool variantB;

  explicit Game(bool b) : w(sink, header(), options()), variantB(b) {}
  static Header header() {
    Header h;
    h.recorderVersion = "make_golden_logs";
    h.executable = "/opt/game/bin/game";
    h.commandLine = {"/opt/game/bin/game", "--level", "1"};
    h.runtimes = {Runtime{Runtime::Kind::kBdwgc, "8.2"}, Runtime{Runtime::Kind::kMono, "6.12"}};
    return h;
  }
  static WriterOptions options() {
    WriterOptions o;
    o.recordsChunkBytes = 1024;  // many chunks
    return o;
  }
  uint32_t next(uint32_t n) {  // LCG: the same numbers on every platform
    rng = rng * 1103515245u + 12345u;
    return (rng >> 16) % n;
  }
  EventCommon ev(uint32_t thread = 0) {
    time += 2500;
    return EventCommon{seq++, time, thread};
  }

  std::vector<uint8_t> run() {
    w.write(ThreadStart{ev(), 0, 4000, "main", 0, 0});
    w.write(ThreadStart{ev(1), 1, 4001, "loader", 0, 0});
    w.write(ModuleLoad{ev(kRecorderThread), "/opt/game/bin/game", kGame, 0x100000, {0xab}, {{0, 0x100000, 5}}});
    w.write(ModuleLoad{ev(kRecorderThread), "/lib/x86_64-linux-gnu/libc.so.6", kLibc, 0x200000, {0xcd}, {{0, 0x200000, 5}}});
    w.write(ModuleLoad{ev(kRecorderThread), "/usr/lib/libgc.so.1", kLibgc, 0x100000, {0xef}, {{0, 0x100000, 5}}});
    w.write(LogString{1, "level_start"});
    w.write(LogString{2, "level_end"});
    w.write(TypeDef{1, "Game.Enemy", 64, 0});
    w.write(TypeDef{2, "Game.Bullet", 32, 0});
    w.write(TypeDef{3, "System.String", 0, 0});
    w.write(MethodDef{1, "Game.Main:Update ()", 0});
    w.write(MethodDef{2, "Game.Level:Spawn (int)", 0});
    w.write(MethodDef{3, "(wrapper alloc) object:AllocSmall (intptr,intptr)", 0});
    // Native: main -> update -> {loadTextures -> malloc, spawnEnemy -> GC_malloc, fire -> GC_malloc}
    w.write(StackNode{1, 0, kGame + 0x1000, false});   // main
    w.write(StackNode{2, 1, kGame + 0x1100, false});   // update
    w.write(StackNode{3, 2, kGame + 0x1300, false});   // loadTextures
    w.write(StackNode{4, 3, kLibc + 0x9a0, false});    // malloc
    w.write(StackNode{5, 2, kGame + 0x1200, false});   // spawnEnemy
    w.write(StackNode{6, 5, kLibgc + 0x500, false});   // GC_malloc
    w.write(StackNode{7, 2, kGame + 0x1400, false});   // fire
    w.write(StackNode{8, 7, kLibgc + 0x500, false});   // GC_malloc
    // Managed: Update -> Spawn -> (wrapper alloc)
    w.write(StackNode{9, 0, 1, true});
    w.write(StackNode{10, 9, 2, true});
    w.write(StackNode{11, 10, 3, true});

    std::vector<std::pair<uint64_t, HeapKind>> gcLive;
    std::vector<uint64_t> textures;
    uint64_t nextGc = 0x10000000, nextNative = 0x20000000, nextManaged = 0x30000000;
    uint64_t frame = 0;
    uint32_t gc = 0;
    for (uint32_t level = 1; level <= 3; ++level) {
      w.write(CustomEvent{ev(), 1, {static_cast<uint8_t>(level)}});
      // Textures (native, loader thread); the last level frees half the old ones.
      uint32_t textureCount = variantB ? 3 : 4 + level;
      for (uint32_t i = 0; i < textureCount; ++i) {
        textures.push_back(nextNative += 0x1000);
        w.write(Alloc{ev(1), HeapKind::kNative, textures.back(), 4096, 4096, 4, 0});
      }
      if (level == 3)
        for (size_t i = 0; i < textures.size(); i += 2) w.write(Free{ev(1), HeapKind::kNative, textures[i]});
      for (uint32_t f = 0; f < 4; ++f) {
        w.write(FrameMark{ev(), ++frame});
        uint32_t enemies = 2 + next(3), bullets = (variantB ? 8 : 5) + next(4);
        for (uint32_t i = 0; i < enemies; ++i) {
          gcLive.push_back({nextGc += 64, HeapKind::kGcNormal});
          w.write(Alloc{ev(), HeapKind::kGcNormal, gcLive.back().first, 64, 64, 6, 1});
        }
        for (uint32_t i = 0; i < bullets; ++i) {
          gcLive.push_back({nextGc += 32, HeapKind::kGcAtomic});
          w.write(Alloc{ev(), HeapKind::kGcAtomic, gcLive.back().first, 32, 32, 8, 2});
        }
        // Managed strings from Spawn, through the allocation wrapper.
        gcLive.push_back({nextManaged += 48, HeapKind::kManaged});
        w.write(Alloc{ev(), HeapKind::kManaged, gcLive.back().first, 40, 48, 11, 3});
        // An explicit free of an enemy, and a free bdwgc never allocated (unknown).
        if (f == 2) {
          for (size_t k = 0; k < gcLive.size(); ++k)
            if (gcLive[k].second == HeapKind::kGcNormal) {
              w.write(Free{ev(), HeapKind::kGcNormal, gcLive[k].first});
              gcLive.erase(gcLive.begin() + static_cast<long>(k));
              break;
            }
          w.write(Free{ev(), HeapKind::kGcNormal, 0x0badf00d0});
        }
      }
      // Two GCs a level: bullets die at each, enemies of the level before at the second.
      for (int half = 0; half < 2; ++half) {
        ++gc;
        w.write(GcBegin{ev(), gc, 1u << 20, -1});
        std::vector<uint64_t> dead;
        for (size_t k = 0; k < gcLive.size();) {
          bool dies = gcLive[k].second == HeapKind::kGcAtomic ||
                      (half == 1 && gcLive[k].second == HeapKind::kGcNormal && next(2) == 0) ||
                      (gcLive[k].second == HeapKind::kManaged && next(3) == 0);
          if (dies) {
            dead.push_back(gcLive[k].first);
            gcLive.erase(gcLive.begin() + static_cast<long>(k));
          } else {
            ++k;
          }
        }
        w.write(Collected{gc, dead});
        w.write(GcEnd{ev(), gc, (1u << 20) - 4096 * gc, 4096 * gc, 100000 + 1000 * gc});
      }
      if (level == 2) w.write(Lost{ev(), 2, 1, "ring overflow"});
      w.write(CustomEvent{ev(), 2, {static_cast<uint8_t>(level)}});
    }
    w.write(ThreadStop{ev(1), 1});
    w.finish();
    return std::move(sink.bytes);
  }
};

bool save(const std::string& path, const std::vector<uint8_t>& b) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(b.data(), 1, b.size(), f) == b.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

// Each wrapper (leaf) under a caller named like the code that really allocates, under main.
std::vector<uint8_t> wrappers() {
  MemorySink sink;
  WriterOptions o;
  LogWriter w(sink, Game::header(), o);
  struct Path {
    const char* caller;
    const char* wrapper;
  };
  const Path paths[] = {
      {"cp_parser_declaration", "xmalloc"},       {"ggc_grow", "xcalloc"},
      {"obstack_grow", "xrealloc"},               {"cl_make_list", "ecl_alloc_object"},
      {"cl_make_list", "ecl_list1"},              {"si_read_form", "ecl_cons"},
      {"make_stringbuf", "scm_gc_malloc_pointerless"}, {"scm_c_make_vector", "scm_gc_malloc"},
      {"sqlite3VdbeExec", "sqlite3DbMallocRaw"},  {"sqlite3BtreeInsert", "sqlite3Malloc"},
      {"list_append", "PyObject_Malloc"},         {"PyList_New", "_PyObject_GC_New"},
      {"unicode_new", "PyMem_Malloc"},
      // Real code whose names merely start like a wrapper's: still charged.
      {"print_stats", "xmalloc_stats_report"},    {"print_stats", "sqlite3MallocStats"},
  };
  uint32_t id = 1, node = 1;
  w.write(MethodDef{id, "main", 0});
  w.write(StackNode{node, 0, id, true});
  uint64_t seq = 0, addr = 0x10000;
  for (const Path& p : paths) {
    uint32_t callerNode = ++node, leafNode = ++node;
    w.write(MethodDef{++id, p.caller, 0});
    w.write(StackNode{callerNode, 1, id, true});
    w.write(MethodDef{++id, p.wrapper, 0});
    w.write(StackNode{leafNode, callerNode, id, true});
    for (uint64_t k = 0; k <= id % 3; ++k, ++seq, addr += 0x100)
      w.write(Alloc{{seq, seq * 1000, 0}, HeapKind::kNative, addr, 16 * id, 16 * id, leafNode, 0});
  }
  w.finish();
  return std::move(sink.bytes);
}

// Chunk 0: a managed stack and five allocations on it (seq 0-4); chunk 1: what `bad(w, seq)`
// writes, then five frame marks.
template <class Bad>
std::vector<uint8_t> corrupt(Bad&& bad) {
  MemorySink sink;
  LogWriter w(sink, Game::header(), WriterOptions{});
  uint64_t seq = 0;
  auto ev = [&] {
    EventCommon e{seq, seq * 1000, 0};
    ++seq;
    return e;
  };
  w.write(MethodDef{1, "Game.Level:Spawn (int)", 0});
  w.write(StackNode{1, 0, 1, true});
  for (uint64_t i = 0; i < 5; ++i)
    w.write(Alloc{ev(), HeapKind::kManaged, 0x10000 + 0x40 * i, 48, 48, 1, 0});
  w.flush();
  bad(w, ev);
  for (uint64_t f = 1; f <= 5; ++f) w.write(FrameMark{ev(), f});
  w.finish();
  return std::move(sink.bytes);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_golden_logs DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  std::vector<uint8_t> a = Game(false).run();
  std::vector<uint8_t> b = Game(true).run();
  std::vector<uint8_t> cut(a.begin(), a.begin() + static_cast<long>(a.size() * 55 / 100));
  std::vector<uint8_t> badAddress = corrupt([](LogWriter& w, auto& ev) {
    w.write(Alloc{ev(), HeapKind::kManaged, 0x1000000000040, 48, 48, 1, 0});
  });
  std::vector<uint8_t> badStack = corrupt([](LogWriter& w, auto& ev) {
    w.write(StackNode{70000, 1, 1, true});
    w.write(Alloc{ev(), HeapKind::kManaged, 0x10400, 48, 48, 70000, 0});
  });
  if (!save(dir + "/game.hml", a) || !save(dir + "/game_b.hml", b) || !save(dir + "/cut.hml", cut) ||
      !save(dir + "/wrappers.hml", wrappers()) ||
      !save(dir + "/corrupt_address.hml", badAddress) ||
      !save(dir + "/corrupt_stack.hml", badStack)) {
    std::perror("make_golden_logs");
    return 1;
  }
  return 0;
}
