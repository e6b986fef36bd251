#include "test_log.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <set>

namespace rtest {

std::vector<uint8_t> makeWorkload(uint32_t seed, uint32_t gcs, uint32_t allocsPerGc,
                                  uint32_t chunkBytes, bool lost) {
  LogBuilder b(chunkBytes);
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };

  b.put(ThreadStart{b.next(), 0, 100, "main", 0x7ffc00000000, 0x7ffc00800000});
  b.put(ThreadStart{b.next(1), 1, 101, "worker", 0x7f0000001000, 0x7f0000101000});
  b.put(ModuleLoad{b.next(kRecorderThread), "/bin/game", 0x400000, 0x10000, {1, 2, 3}, {{0, 0x10000, 5}}});
  b.put(LogString{1, "level_start"});
  b.put(LogString{2, "level_end"});
  b.put(TypeDef{1, "Enemy", 48, 0});
  b.put(TypeDef{2, "Bullet", 16, 0});
  b.put(TypeDef{3, "System.String", 0, 0});
  b.put(MethodDef{1, "Game.Level:Spawn (int)", 0});
  b.put(MethodDef{2, "Game.Main:Update ()", 0});
  // Native stacks: main(1) -> update(2) -> {spawn(3), fire(4)}; malloc leaf (5) under spawn.
  b.put(StackNode{1, 0, 0x401000, false});
  b.put(StackNode{2, 1, 0x401100, false});
  b.put(StackNode{3, 2, 0x401200, false});
  b.put(StackNode{4, 2, 0x401300, false});
  b.put(StackNode{5, 3, 0x401400, false});
  // Managed: Update(6) -> Spawn(7).
  b.put(StackNode{6, 0, 2, true});
  b.put(StackNode{7, 6, 1, true});
  const uint32_t stacks[] = {0, 3, 4, 5, 7};

  std::vector<std::pair<uint64_t, HeapKind>> live;
  std::set<uint64_t> used;
  uint64_t nextAddr = 0x10000;
  uint64_t frame = 0;
  uint32_t levelStarts = 0;
  auto fresh = [&] {
    nextAddr += 16 * (1 + pick(4));
    return nextAddr;
  };
  for (uint32_t gc = 1; gc <= gcs; ++gc) {
    if (gc % 3 == 1) {
      b.put(CustomEvent{b.next(), 1, {static_cast<uint8_t>(++levelStarts)}});
    }
    for (uint32_t i = 0; i < allocsPerGc; ++i) {
      uint64_t r = pick(100);
      uint32_t thread = static_cast<uint32_t>(pick(2));
      if (r < 55 || live.empty()) {
        HeapKind heap = pick(3) == 0 ? HeapKind::kNative
                                      : (pick(2) ? HeapKind::kGcNormal : HeapKind::kManaged);
        // Sometimes reuse a dead address, sometimes a live one (a missed free).
        uint64_t addr = fresh();
        if (pick(50) == 0 && !live.empty()) addr = live[pick(live.size())].first;
        uint64_t size = 16 * (1 + pick(6));
        uint32_t type = heap == HeapKind::kNative ? 0 : static_cast<uint32_t>(1 + pick(3));
        b.put(Alloc{b.next(thread), heap, addr, size, size + 8 * pick(2), stacks[pick(5)], type});
        auto it = std::find_if(live.begin(), live.end(), [&](auto& p) { return p.first == addr; });
        if (it != live.end()) live.erase(it);
        live.push_back({addr, heap});
      } else if (r < 80) {
        size_t k = pick(live.size());
        b.put(Free{b.next(thread), live[k].second, live[k].first});
        live.erase(live.begin() + static_cast<long>(k));
      } else if (r < 85) {
        b.put(Free{b.next(thread), HeapKind::kGcNormal, 0xdead0000 + 16 * pick(100)});  // unknown
      } else if (r < 92) {
        size_t k = pick(live.size());
        uint64_t na = pick(2) ? live[k].first : fresh();
        b.put(Realloc{b.next(thread), HeapKind::kNative, live[k].first, na, 100 + pick(50), 160, 4, 0});
        live.erase(live.begin() + static_cast<long>(k));
        live.push_back({na, HeapKind::kNative});
      } else if (r < 95) {
        uint64_t na = fresh();
        b.put(Realloc{b.next(thread), HeapKind::kNative, 0, na, 32, 32, 5, 0});  // plain alloc
        live.push_back({na, HeapKind::kNative});
      } else {
        b.put(FrameMark{b.next(), ++frame});
      }
    }
    // The GC: collects about a third of the GC-heap objects, plus one address never live.
    b.put(GcBegin{b.next(), gc, 1000 * gc, -1});
    b.put(RootSet{b.next(), gc, {{0x600000, 4096, RootSource::kStaticData, 0}}});
    std::vector<uint64_t> dead;
    for (size_t k = 0; k < live.size();) {
      if (live[k].second != HeapKind::kNative && pick(3) == 0) {
        dead.push_back(live[k].first);
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        ++k;
      }
    }
    dead.push_back(0xbad00000 + gc * 16);
    std::sort(dead.begin(), dead.end());
    b.put(Collected{gc, dead});
    b.put(GcEnd{b.next(), gc, 900 * gc, 100, 5000 + gc});
    if (gc % 3 == 0) b.put(CustomEvent{b.next(), 2, {}});
    if (lost && gc == gcs / 2) b.put(Lost{b.next(), 3, 1, "test overflow"});
  }
  b.put(ThreadStop{b.next(1), 1});
  return b.finish();
}

namespace {

struct RefVisitor {
  uint64_t limit;
  RefState& s;
  std::map<uint32_t, std::vector<uint64_t>> pending;
  void operator()(const Alloc& a) {
    if (a.ev.seq >= limit) return;
    s[a.address] = {{a.heap, a.ev.thread, a.size, a.actualSize, a.stackId, a.typeId}, a.ev.seq};
  }
  void operator()(const Free& f) {
    if (f.ev.seq < limit) s.erase(f.address);
  }
  void operator()(const Realloc& r) {
    if (r.ev.seq >= limit) return;
    if (r.oldAddress) s.erase(r.oldAddress);
    s[r.newAddress] = {{r.heap, r.ev.thread, r.size, r.actualSize, r.stackId, r.typeId}, r.ev.seq};
  }
  void operator()(const Collected& c) {
    auto& v = pending[c.gcNumber];
    v.insert(v.end(), c.addresses.begin(), c.addresses.end());
  }
  void operator()(const GcEnd& g) {
    if (g.ev.seq >= limit) return;
    for (uint64_t a : pending[g.gcNumber]) s.erase(a);
    pending.erase(g.gcNumber);
  }
  template <class T>
  void operator()(const T&) {}
};

}  // namespace

RefState referenceState(const LogReader& reader, uint64_t limit) {
  RefState s;
  RefVisitor v{limit, s, {}};
  reader.forEachRecord(v);
  return s;
}

RefState engineState(const heapman::replay::Replay& r) {
  RefState s;
  r.live().forEach([&](const heapman::replay::LiveObject& o) {
    s[o.address] = {r.info(o.info()), o.birthSeq()};
  });
  return s;
}

void writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
}

}  // namespace rtest
