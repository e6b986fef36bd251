// demo_log: writes a small HeapMan log by hand, with every record kind, from a real malloc churn
// loop (the addresses, sizes and sequence are glibc's real answers). It stands in for the
// recorder until `heaprec` lands, and gives `heapman info` something to read.
//
//   demo_log OUT.hml [frames] [chunk-bytes]
//
// chunk-bytes: raw bytes of a records or RAM dump chunk before it is closed (default the
// writer's, 1 MiB); small values give small logs of many chunks (the fuzzer's seeds).
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "heapman/logformat/writer.h"

using namespace heapman::log;

namespace {

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: demo_log OUT.hml [frames] [chunk-bytes]\n");
    return 2;
  }
  int frames = argc > 2 ? std::atoi(argv[2]) : 120;
  WriterOptions options;
  if (argc > 3) {
    int bytes = std::atoi(argv[3]);
    if (bytes < 64) {
      std::fprintf(stderr, "demo_log: chunk-bytes must be at least 64, not '%s'\n", argv[3]);
      return 2;
    }
    options.recordsChunkBytes = options.ramChunkBytes = static_cast<uint32_t>(bytes);
  }
  FILE* f = std::fopen(argv[1], "wb");
  if (!f) {
    std::perror(argv[1]);
    return 1;
  }
  Header h;
  h.recorderVersion = "demo_log 0.1.0";
  h.pid = static_cast<uint32_t>(getpid());
  h.executable = argv[0];
  h.commandLine.assign(argv, argv + argc);
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  h.startWallTimeNs = wall.tv_sec * 1000000000ll + wall.tv_nsec;
  h.startClockNs = nowNs();
  h.runtimes = {{Runtime::Kind::kNativeMalloc, "glibc"}};
  h.options = {{"source", "demo_log"}};
  FdSink sink(fileno(f));
  LogWriter w(sink, h, options);

  uint64_t seq = 0;
  auto ev = [&] { return EventCommon{seq++, nowNs() / 1000 * 1000 - h.startClockNs / 1000 * 1000, 0}; };
  w.write(ThreadStart{ev(), 0, static_cast<uint32_t>(gettid()), "main", 0, 0});
  w.write(ModuleLoad{ev(), "/proc/self/exe", 0x400000, 0x10000, {}, {}});
  // Three call sites: main -> update -> spawn / makeString / cache.
  const uint64_t kMain = 0x401000, kUpdate = 0x401100, kSpawn = 0x401200, kStr = 0x401300,
                 kCache = 0x401400;
  w.write(StackNode{1, 0, kMain, false});
  w.write(StackNode{2, 1, kUpdate, false});
  w.write(StackNode{3, 2, kSpawn, false});
  w.write(StackNode{4, 2, kStr, false});
  w.write(StackNode{5, 2, kCache, false});
  w.write(LogString{1, "level_start"});
  w.write(LogString{2, "level_end"});
  w.write(TypeDef{1, "Entity", 48, 0});

  std::vector<void*> cache;
  uint32_t gc = 0;
  for (int level = 0; level < 2; ++level) {
    w.write(CustomEvent{ev(), 1, {static_cast<uint8_t>(level)}});
    std::vector<void*> entities;
    for (int frame = 0; frame < frames / 2; ++frame) {
      w.write(FrameMark{ev(), static_cast<uint64_t>(level * frames / 2 + frame + 1)});
      for (int i = 0; i < 8; ++i) {  // per-frame temporaries: churn
        size_t n = 16 + (i * 24) % 200;
        void* p = std::malloc(n);
        w.write(Alloc{ev(), HeapKind::kNative, reinterpret_cast<uint64_t>(p), n,
                      malloc_usable_size(p), 4, 0});
        w.write(Free{ev(), HeapKind::kNative, reinterpret_cast<uint64_t>(p)});
        std::free(p);
      }
      if (frame % 4 == 0) {
        void* e = std::malloc(48);
        entities.push_back(e);
        w.write(Alloc{ev(), HeapKind::kNative, reinterpret_cast<uint64_t>(e), 48,
                      malloc_usable_size(e), 3, 1});
      }
      if (frame % 10 == 0) {  // the leaking cache
        void* c = std::malloc(256);
        cache.push_back(c);
        w.write(Alloc{ev(), HeapKind::kNative, reinterpret_cast<uint64_t>(c), 256,
                      malloc_usable_size(c), 5, 0});
      }
    }
    ++gc;
    w.write(GcBegin{ev(), gc, 1 << 20, -1});
    std::vector<uint64_t> dead;
    for (void* e : entities) dead.push_back(reinterpret_cast<uint64_t>(e));
    w.write(Collected{gc, dead});
    w.write(GcEnd{ev(), gc, 1 << 20, 1 << 19, 1000});
    for (void* e : entities) {
      uint8_t bytes[48] = {};
      w.write(RamSegment{SegmentKind::kObject, gc, reinterpret_cast<uint64_t>(e), 48, 0, true,
                         std::vector<uint8_t>(bytes, bytes + 48)});
      std::free(e);
    }
    w.write(CustomEvent{ev(), 2, {static_cast<uint8_t>(level)}});
  }
  for (void* c : cache) std::free(c);
  w.write(ThreadStop{ev(), 0});
  w.finish();
  std::fclose(f);
  if (!w.ok()) {
    std::fprintf(stderr, "demo_log: %s\n", w.error().c_str());
    return 1;
  }
  std::printf("demo_log: wrote %s (%llu bytes, %llu events)\n", argv[1],
              static_cast<unsigned long long>(w.bytesWritten()), static_cast<unsigned long long>(seq));
  return 0;
}
