// Generated run summaries for the store's tests and bench/run_store_bench.sh: what a gc_game run
// of `levels` levels would give, with a site that leaks 5120 bytes a level when `leak` is set,
// and `extraSites` more blame rows at each point (a bigger program). Deterministic in `n`.
#pragma once

#include <string>

#include "heapman/store/summary.h"

namespace storetest {

inline heapman::store::RunSummary makeSummary(int n, bool leak, int levels = 4,
                                              int extraSites = 0) {
  using namespace heapman::store;
  RunSummary s;
  char id[17];
  std::snprintf(id, sizeof id, "%016x", 0x5eed0000u + static_cast<unsigned>(n));
  s.run.logId = id;
  s.run.program = "/usr/games/gc_game";
  s.run.commandLine = "gc_game 4 20 " + std::to_string(n);
  s.run.options = "ram-dumps=none";
  s.run.hostname = "farm-" + std::to_string(n % 7);
  s.run.pid = 1000u + static_cast<uint32_t>(n);
  s.run.startWallNs = 1'700'000'000'000'000'000 + int64_t{n} * 1'000'000'000;
  s.run.durationNs = 50'000'000;
  s.run.events = 2400, s.run.allocs = 1200, s.run.frees = 3, s.run.frames = 80;
  s.run.gcCount = 3;
  s.run.peakBytes = 1'300'000u + (leak ? 20'480u : 0u) + static_cast<uint64_t>(n % 3) * 8;
  s.run.garbageBytes = 64'000;
  s.run.repeatingEvent = "level_end";
  s.run.repetitions = static_cast<uint64_t>(levels);
  s.run.tags = {{"build", std::to_string(n)}, {"platform", "linux"}};
  for (uint32_t g = 1; g <= 3; ++g)
    s.gcs.push_back({g, g * 10'000'000ull, 500'000ull * g, 1'000'000, 900'000, 800'000, 100'000});
  for (int k = 1; k <= levels; ++k) {
    std::string p = "level_end#" + std::to_string(k);
    uint64_t kept = leak ? 5120u * static_cast<uint64_t>(k) : 0;
    s.points.push_back({p, "gc", 300'000u * static_cast<uint64_t>(k) + kept, 100u});
    s.points.push_back({p, "native", 704, 2});
    s.sites.push_back({p, "loadAsset(char const*)", "gc_game", 300'000u * static_cast<uint64_t>(k), 60});
    s.sites.push_back({p, "spawnEntity(int, int, Entity*)", "gc_game", 12'050, 160});
    if (leak) s.sites.push_back({p, "recordInput(int, int)", "gc_game", kept, 20u * static_cast<uint64_t>(k)});
    for (int x = 0; x < extraSites; ++x)
      s.sites.push_back({p, "Subsystem" + std::to_string(x) + "::update()", "game",
                         1000u + static_cast<uint64_t>(x), 10});
    s.types.push_back({p, "(gc_atomic)", 300'000u * static_cast<uint64_t>(k), 80});
  }
  s.points.push_back({"peak", "gc", s.run.peakBytes - 704, 400});
  s.points.push_back({"peak", "native", 704, 2});
  s.churn.push_back({"hudText(int, int)", "gc_game", 40'000, 41'000, 40'000, 0});
  s.churn.push_back({"spawnEntity(int, int, Entity*)", "gc_game", 24'000, 48'000, 24'000, 0});
  s.leaks.push_back({"site", "loadAsset(char const*) (gc_game)", 300'000,
                     "loadAsset(char const*) grows by 300000 bytes per level_end"});
  if (leak)
    s.leaks.push_back({"site", "recordInput(int, int) (gc_game)", 5120,
                       "recordInput(int, int) grows by 5120 bytes per level_end"});
  return s;
}

}  // namespace storetest
