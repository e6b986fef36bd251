// map_bench: speed of the heap map's pictures, and apart from it ffmpeg's encoding of them.
//
//   map_bench DIR [OBJECTS] [PICTURES]
//
// Writes DIR/map_bench.hml: OBJECTS (default 1 000 000) live objects of 8 types on three heaps
// (sizes 16-304 bytes, 16-byte aligned, in four arenas far apart), then PICTURES (default 150)
// frames each freeing 2 000 random objects and allocating 2 000 in their place, a frame mark
// after each. Then, as `heapman video --every frame:1` does, replays it forward once from the
// first frame and draws a 1024x1024 picture per frame, coloured by kind, type and age in turn
// (the figures: pictures per second of drawing alone, and the replay between pictures apart).
// Last, the kind pictures go to ffmpeg (libx264, as `heapman video`): its CPU time per frame and
// the wall time of the whole, shown apart from the drawing. Run with HEAPMAN_REPLAY_THREADS=1 to
// keep the replay on the drawing's core (run_map_bench.sh does).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "heapman/logformat/writer.h"
#include "heapman/map/heap_map.h"
#include "heapman/map/video.h"

using namespace heapman;

namespace {

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void writeLog(const std::string& path, size_t objects, size_t pictures) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::perror(path.c_str()), std::exit(1);
  log::FdSink sink(fileno(f));
  log::Header h;
  h.executable = "map_bench";
  log::LogWriter w(sink, h);
  static const char* kTypes[8] = {"Game.Enemy",   "Game.Bullet", "System.String", "Game.Vec3[]",
                                  "Game.Particle", "Game.Level", "System.Object[]", "Game.Sound"};
  for (uint32_t t = 0; t < 8; ++t) {
    log::TypeDef d;
    d.id = t + 1;
    d.name = kTypes[t];
    w.write(d);
  }
  std::mt19937_64 rng(42);
  uint64_t seq = 0, time = 0;
  struct Obj {
    uint64_t address, size;
    log::HeapKind heap;
    uint32_t type;
  };
  std::vector<Obj> live;
  live.reserve(objects);
  uint64_t next = 0x7f2000000000;
  auto alloc = [&](const Obj& o) {
    log::Alloc a;
    a.ev = {seq++, time += 50, 0};
    a.heap = o.heap;
    a.address = o.address;
    a.size = o.size;
    a.actualSize = (o.size + 15) / 16 * 16;
    a.typeId = o.type;
    w.write(a);
  };
  static const log::HeapKind kHeaps[3] = {log::HeapKind::kGcNormal, log::HeapKind::kGcAtomic,
                                          log::HeapKind::kNative};
  for (size_t i = 0; i < objects; ++i) {
    if (i % (objects / 4 + 1) == 0) next = (next + (uint64_t{1} << 32)) & ~uint64_t{0xFFFF};
    Obj o{next, 16 + 16 * (rng() % 19), kHeaps[rng() % 3], uint32_t(1 + rng() % 8)};
    next += (o.size + 15) / 16 * 16;
    live.push_back(o);
    alloc(o);
  }
  for (size_t frame = 1; frame <= pictures; ++frame) {
    for (int k = 0; k < 2000; ++k) {
      Obj& o = live[rng() % live.size()];
      log::Free fr;
      fr.ev = {seq++, time += 50, 0};
      fr.heap = o.heap;
      fr.address = o.address;
      w.write(fr);
      o.type = uint32_t(1 + rng() % 8);  // the same block again, another object
      alloc(o);
    }
    log::FrameMark m;
    m.ev = {seq++, time += 16'000'000, 0};
    m.frame = frame;
    w.write(m);
  }
  w.finish();
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: map_bench DIR [OBJECTS] [PICTURES]\n");
    return 2;
  }
  std::string log = std::string(argv[1]) + "/map_bench.hml";
  size_t objects = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1'000'000;
  size_t pictures = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 150;
  writeLog(log, objects, pictures);
  replay::ReplayOptions ro;
  ro.useIndex = false;
  ro.notes = nullptr;
  replay::Replay r(log, ro);
  auto t0 = std::chrono::steady_clock::now();
  map::LogScan scan = map::scanLog(r);
  double scanSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("log: %zu live objects, %zu pictures of 2000 frees + 2000 allocs; scan %.2f s\n",
              r.live().size(), pictures, scanSeconds);
  map::PointClock clock(r.tables());
  map::VideoRequest req;
  req.from = r.resolve("frame:1");
  req.to = r.resolve("end");
  req.every = map::parseEvery("frame:1");
  map::VideoPlan plan = map::planVideo(r.tables(), clock, req);
  for (const char* color : {"kind", "type", "age"}) {
    map::MapOptions mo;
    mo.color = map::parseColorBy(color);
    map::MapRenderer m(r, nullptr, scan, mo);
    double cpu0 = cpuSeconds();
    map::VideoStats st = map::renderVideo(r, m, plan, [](const map::MapPicture&, size_t, uint32_t) {});
    double cpu = cpuSeconds() - cpu0;
    // One picture from the live set (what `heapman map` draws, and a video's first picture).
    r.seek(plan.points[plan.points.size() / 2].limit);
    double rep0 = cpuSeconds();
    map::MapPicture one = m.render();
    double repaint = cpuSeconds() - rep0;
    std::printf("colour %-5s %zu pictures %dx%d, %llu bytes a pixel: drawing %.2f ms CPU a picture "
                "= %.1f pictures per CPU-second (wall %.3f s); replay between them %.3f s wall; "
                "all of it %.3f s CPU = %.1f pictures per CPU-second; one picture from the live "
                "set (%llu objects) %.1f ms CPU\n",
                color, st.pictures, mo.width, mo.height,
                static_cast<unsigned long long>(m.layout().bytesPerPixel()),
                1000 * st.renderCpuSeconds / double(st.pictures),
                double(st.pictures) / st.renderCpuSeconds, st.renderSeconds, st.replaySeconds, cpu,
                double(st.pictures) / cpu, static_cast<unsigned long long>(one.liveObjects),
                1000 * repaint);
  }
  // ffmpeg, apart.
  std::string mp4 = std::string(argv[1]) + "/map_bench.mp4";
  map::MapOptions mo;
  map::MapRenderer m(r, nullptr, scan, mo);
  map::VideoEncoder enc(mp4, mo.width, mo.height, 30);
  auto w0 = std::chrono::steady_clock::now();
  map::VideoStats st = map::renderVideo(r, m, plan, [&](const map::MapPicture& p, size_t, uint32_t c) {
    enc.write(p.image, c);
  });
  enc.finish();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::printf("with ffmpeg: %zu frames in %.2f s wall = %.1f frames/s; drawing %.2f s; ffmpeg "
              "(libx264 veryfast) %.2f s CPU = %.1f ms a frame, blocked on its pipe %.2f s\n",
              st.pictures, wall, double(st.pictures) / wall, st.renderSeconds,
              enc.ffmpegCpuSeconds(), 1000 * enc.ffmpegCpuSeconds() / double(st.pictures),
              enc.writeSeconds());
  return 0;
}
