// replay_bench: speed and memory of the replay engine on a log (the churn log of
// `logformat_bench write`, see run_replay_bench.sh).
//
//   replay_bench full LOG          index pass (tables + checkpoints, in memory) and a full replay
//                                  from the start without checkpoints: events/s of each
//   replay_bench seek LOG [N]      opens LOG with its index file (built first if missing), then N
//                                  seeks (default 50) to random points: open time, mean/max seek
//   replay_bench memory LOG        bytes per live object of the state at its largest point
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>

#include "heapman/replay/replay.h"

using namespace heapman::replay;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// CPU time of the whole process (every thread), s: with HEAPMAN_REPLAY_THREADS=1 the time of the
// one thread that decodes and applies, which other processes on the machine inflate less than
// wall time.
double cpu() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

int full(const std::string& path) {
  ReplayOptions o;
  o.useIndex = false;
  o.notes = nullptr;
  double t0 = now(), c0 = cpu();
  Replay r(path, o);
  double t1 = now(), c1 = cpu();
  uint64_t events = r.tables().eventCount;
  // The best of `rounds` replays (default 1; REPLAY_BENCH_ROUNDS), by CPU time.
  const char* e = std::getenv("REPLAY_BENCH_ROUNDS");
  int rounds = e ? std::max(1, std::atoi(e)) : 1;
  double wall = 1e30, cputime = 1e30;
  for (int i = 0; i < rounds; ++i) {
    double a = now(), ca = cpu();
    r.replayFromStart(r.tables().endSeq);
    double b = now(), cb = cpu();
    if (cb - ca < cputime) cputime = cb - ca, wall = b - a;
  }
  std::printf("index pass: %" PRIu64 " events in %.3f s = %.1f M events/s (%zu checkpoints); "
              "cpu %.3f s = %.1f M events/cpu-s\n",
              events, t1 - t0, events / (t1 - t0) / 1e6, r.index().checkpoints, c1 - c0,
              events / (c1 - c0) / 1e6);
  std::printf("full replay: %" PRIu64 " events in %.3f s = %.1f M events/s; %zu live objects at "
              "end; cpu %.3f s = %.1f M events/cpu-s\n",
              events, wall, events / wall / 1e6, r.live().size(), cputime,
              events / cputime / 1e6);
  return 0;
}

// EVERY and SHARE (ReplayOptions::checkpointEvents, indexShare) other than the defaults build
// an index of their own next to the log (LOG.EVERY-SHARE.hmx); `anySeq`: random sequence points
// (what heapman serve is asked) rather than GCs.
int seek(const std::string& path, int n, uint64_t every, uint64_t share, bool anySeq) {
  ReplayOptions o;
  o.notes = nullptr;
  if (every != o.checkpointEvents || share != o.indexShare) {
    o.checkpointEvents = every;
    o.indexShare = share;
    o.indexPath = path + "." + std::to_string(every) + "-" + std::to_string(share) + ".hmx";
  }
  double t0 = now();
  { Replay warm(path, o); }  // builds the index file when missing or stale
  double t1 = now();
  Replay r(path, o);
  double t2 = now();
  std::printf("index: %s (%zu checkpoints, %.1f MiB); first open %.3f s, open with index %.3f s\n",
              r.index().path.c_str(), r.index().checkpoints, r.index().fileBytes / 1048576.0,
              t1 - t0, t2 - t1);
  std::mt19937_64 rng(1);
  uint64_t first = r.tables().firstSeq, end = r.tables().endSeq;
  std::vector<uint64_t> points;
  // GCs when the log has them, else sequence points.
  for (const GcRecord& g : r.tables().gcs)
    if (g.ended && !anySeq) points.push_back(g.endSeq + 1);
  bool gcs = !points.empty();
  if (!gcs)
    for (int i = 0; i < n; ++i) points.push_back(first + rng() % (end - first));
  std::shuffle(points.begin(), points.end(), rng);
  if (points.size() > static_cast<size_t>(n)) points.resize(static_cast<size_t>(n));
  double total = 0, worst = 0;
  for (uint64_t p : points) {
    double a = now();
    r.seek(p);
    double d = now() - a;
    total += d;
    worst = std::max(worst, d);
  }
  std::printf("%zu seeks to random %s: mean %.1f ms, max %.1f ms\n", points.size(),
              gcs ? "GCs" : "sequence points", 1e3 * total / points.size(), 1e3 * worst);
  return 0;
}

int memory(const std::string& path) {
  ReplayOptions o;
  o.useIndex = false;
  o.notes = nullptr;
  Replay r(path, o);
  // The largest live set among 64 evenly spaced points.
  uint64_t first = r.tables().firstSeq, end = r.tables().endSeq, best = first;
  size_t bestLive = 0;
  for (int i = 1; i <= 64; ++i) {
    uint64_t p = first + (end - first) * i / 64;
    r.seek(p);
    if (r.live().size() > bestLive) bestLive = r.live().size(), best = p;
  }
  r.seek(best);
  size_t dict = r.tables().infos.size() * sizeof(AllocInfo);
  std::printf("live set at seq %" PRIu64 ": %zu objects, table %zu bytes = %.1f bytes/object; "
              "dictionary %zu infos, %zu bytes (%.2f bytes/object)\n",
              best, r.live().size(), r.live().memoryBytes(),
              double(r.live().memoryBytes()) / double(r.live().size()), r.tables().infos.size(),
              dict, double(dict) / double(r.live().size()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: replay_bench full|seek|seekseq|memory LOG [N [EVERY SHARE]]\n");
    return 2;
  }
  std::string mode = argv[1];
  try {
    if (mode == "full") return full(argv[2]);
    if (mode == "seek" || mode == "seekseq") {
      ReplayOptions d;
      return seek(argv[2], argc > 3 ? std::atoi(argv[3]) : 50,
                  argc > 5 ? std::stoull(argv[4]) : d.checkpointEvents,
                  argc > 5 ? std::stoull(argv[5]) : d.indexShare, mode == "seekseq");
    }
    if (mode == "memory") return memory(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "replay_bench: unknown mode %s\n", mode.c_str());
  return 2;
}
