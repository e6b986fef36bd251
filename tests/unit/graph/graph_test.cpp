// The graph of an in-memory log with known objects and pointers: every edge, the root ranges,
// atomic objects not scanned, interior pointers on or off, hits in no object, an unreachable
// object, dominators; and a second GC whose dump is all deduplicated segments.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "heapman/graph/dominators.h"
#include "heapman/graph/graph_queries.h"
#include "heapman/graph/heap_graph.h"
#include "heapman/logformat/writer.h"
#include "heapman/replay/replay.h"

using namespace heapman;
using namespace heapman::graph;

namespace {

struct Obj {
  const char* name;
  uint64_t address, size;
  log::HeapKind heap;
  std::vector<uint64_t> words;
};

constexpr uint64_t kA = 0x10000, kB = 0x10020, kC = 0x10040, kD = 0x10080, kE = 0x11000,
                   kF = 0x11010, kStatic = 0x600000, kStack = 0x7ffd0000;

std::vector<Obj> objects() {
  return {{"A", kA, 32, log::HeapKind::kGcNormal, {kB, kC + 8, 0x12345, 0}},
          {"B", kB, 32, log::HeapKind::kGcNormal, {kA, kD, 0, 0}},
          {"C", kC, 64, log::HeapKind::kGcNormal, {0, 0, 0, 0, 0, 0, 0, 0}},
          {"D", kD, 16, log::HeapKind::kGcAtomic, {kA, kB}},
          {"E", kE, 16, log::HeapKind::kGcUncollectable, {kC, 0}},
          {"F", kF, 16, log::HeapKind::kGcNormal, {0, 0}}};
}

std::vector<uint8_t> bytesOf(const std::vector<uint64_t>& words) {
  std::vector<uint8_t> b(words.size() * 8);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

std::vector<uint8_t> writeLog(const char* interior, bool finish = true) {
  log::MemorySink sink;
  log::Header h;
  h.runtimes.push_back({log::Runtime::Kind::kBdwgc, "8.2.2"});
  if (interior) h.options.push_back({"gc_all_interior_pointers", interior});
  log::LogWriter w(sink, h);
  uint64_t seq = 1;
  auto ev = [&] { return log::EventCommon{seq++, seq * 10, 0}; };
  for (const Obj& o : objects()) {
    log::Alloc a;
    a.ev = ev();
    a.heap = o.heap;
    a.address = o.address;
    a.size = a.actualSize = o.size;
    w.write(a);
  }
  std::vector<uint64_t> staticWords{kA, 0x100a0, 0}, stackWords{kC + 8, 0};
  for (uint32_t gc : {1u, 2u}) {
    w.write(log::GcBegin{ev(), gc, 1 << 20, -1});
    log::RootSet rs;
    rs.ev = ev();
    rs.gcNumber = gc;
    rs.roots = {{kStatic, 24, log::RootSource::kStaticData, 0},
                {kStack, 16, log::RootSource::kThreadStack, 0}};
    w.write(rs);
    for (const Obj& o : objects())
      w.writeRam(log::SegmentKind::kObject, gc, o.address, bytesOf(o.words));
    w.writeRam(log::SegmentKind::kStaticRoot, gc, kStatic, bytesOf(staticWords));
    w.writeRam(log::SegmentKind::kThreadStack, gc, kStack, bytesOf(stackWords));
    w.write(log::GcEnd{ev(), gc, 1 << 20, 0, 1000});
  }
  if (finish)
    w.finish();
  else
    w.flush();  // no footer: a truncated log, read by scanning
  REQUIRE(w.ok());
  return sink.bytes;
}

replay::ReplayOptions quiet() {
  replay::ReplayOptions o;
  o.useIndex = false;
  o.notes = nullptr;
  return o;
}

// Edges of a node as (target address or root label) multiset.
std::multiset<uint64_t> outAddresses(const HeapGraph& g, uint32_t n) {
  std::multiset<uint64_t> s;
  for (uint32_t t : g.out(n)) s.insert(g.address(t));
  return s;
}

}  // namespace

TEST_CASE("graph of a dumped GC: exact edges, roots, atomic objects, unreachable", "[graph]") {
  replay::Replay r(log::LogReader::fromBytes(writeLog("1")), quiet());
  DumpStore store(r.reader());
  REQUIRE(store.dumpedGcs() == std::vector<uint32_t>{1, 2});
  auto g = HeapGraph::atGc(r, store, 1);
  REQUIRE(g->options().interiorPointers);
  REQUIRE(g->rootCount() == 2);
  REQUIRE(g->stats().objects == 6);
  REQUIRE(g->root(1).source == log::RootSource::kStaticData);
  REQUIRE(g->root(2).source == log::RootSource::kThreadStack);
  uint32_t a = g->objectAt(kA), b = g->objectAt(kB), c = g->objectAt(kC), d = g->objectAt(kD),
           e = g->objectAt(kE), f = g->objectAt(kF);
  REQUIRE(g->objectAt(kC + 63) == c);
  REQUIRE(g->objectAt(kC + 64) == d);
  REQUIRE(g->objectAt(kD + 16) == kNoNode);  // a gap
  REQUIRE(outAddresses(*g, 0) == std::multiset<uint64_t>{kStatic, kStack, kE});
  REQUIRE(outAddresses(*g, 1) == std::multiset<uint64_t>{kA});
  REQUIRE(outAddresses(*g, 2) == std::multiset<uint64_t>{kC});
  REQUIRE(outAddresses(*g, a) == std::multiset<uint64_t>{kB, kC});
  REQUIRE(outAddresses(*g, b) == std::multiset<uint64_t>{kA, kD});
  REQUIRE(g->out(c).empty());
  REQUIRE(g->out(d).empty());  // atomic: its pointer-looking words make no edge
  REQUIRE(outAddresses(*g, e) == std::multiset<uint64_t>{kC});
  REQUIRE(g->out(f).empty());
  const GraphStats& s = g->stats();
  CHECK(s.edges == 7);
  CHECK(s.rootEdges == 2);
  CHECK(s.hitsInNoObject == 1);  // 0x100a0: in a page with objects, in none of them
  CHECK(s.skippedObjects == 1);
  CHECK(s.rootObjects == 1);
  CHECK(s.untracked == 0);
  CHECK(s.liveNotDumped == 0);
  CHECK(s.unreachable == 1);  // F
  CHECK(s.unreachableUntracked == 0);

  std::vector<uint64_t> sizes(g->nodeCount());
  for (uint32_t n = 0; n < g->nodeCount(); ++n) sizes[n] = g->isObject(n) ? g->size(n) : 0;
  DominatorTree t = dominators(g->offsets(), g->targets(), 0, sizes);
  CHECK(t.idom[a] == 1);
  CHECK(t.idom[b] == a);
  CHECK(t.idom[d] == b);
  CHECK(t.idom[c] == 0);
  CHECK(t.idom[e] == 0);
  CHECK(t.idom[f] == UINT32_MAX);
  CHECK(t.retained[a] == 32 + 32 + 16);
  CHECK(t.retained[1] == 80);
  CHECK(t.retained[0] == 32 + 32 + 64 + 16 + 16);
}

TEST_CASE("without interior pointers only object starts make edges, but from stacks", "[graph]") {
  replay::Replay r(log::LogReader::fromBytes(writeLog("0")), quiet());
  DumpStore store(r.reader());
  auto g = HeapGraph::atGc(r, store, 1);
  REQUIRE_FALSE(g->options().interiorPointers);
  REQUIRE(outAddresses(*g, g->objectAt(kA)) == std::multiset<uint64_t>{kB});
  // The stack's word points 8 bytes into C: bdwgc takes interior pointers from stacks always.
  REQUIRE(outAddresses(*g, 2) == std::multiset<uint64_t>{kC});
  CHECK(g->stats().edges == 6);
  CHECK(g->stats().hitsInNoObject == 2);
}

TEST_CASE("deduplicated segments take the bytes of their first copy", "[graph]") {
  replay::Replay r(log::LogReader::fromBytes(writeLog(nullptr)), quiet());
  DumpStore store(r.reader());
  Dump d1 = store.load(1), d2 = store.load(2);
  CHECK(d1.dedupSegments == 0);
  CHECK(d1.storedSegments == 8);
  CHECK(d2.storedSegments == 0);  // GC 2's contents are GC 1's
  CHECK(d2.dedupSegments == 8);
  REQUIRE(d2.objects.size() == 6);
  REQUIRE(d2.roots.size() == 2);
  for (size_t i = 0; i < d1.objects.size(); ++i) {
    REQUIRE(d2.objects[i].address == d1.objects[i].address);
    REQUIRE(std::memcmp(d2.data(d2.objects[i]), d1.data(d1.objects[i]), d1.objects[i].length) == 0);
  }
  auto g = HeapGraph::atGc(r, store, 2);
  CHECK(g->stats().edges == 7);
}

TEST_CASE("the index's table of first copies loads a dump as reading every dump before it does",
          "[graph]") {
  std::vector<uint8_t> bytes = writeLog(nullptr);
  replay::Replay r(log::LogReader::fromBytes(bytes), quiet());
  REQUIRE(r.tables().dumpCopiesIndexed);
  CHECK(r.tables().dumpCopies.size() == 8);  // GC 2 refers to each of GC 1's 8 segments
  DumpStore scanning(r.reader()), indexed(r.reader());
  indexed.useIndexedCopies(r.tables().dumpCopies);
  for (uint32_t gc : {2u, 1u}) {
    Dump a = scanning.load(gc), b = indexed.load(gc);
    REQUIRE(a.bytes == b.bytes);
    REQUIRE(a.objects.size() == b.objects.size());
    for (size_t i = 0; i < a.objects.size(); ++i) {
      CHECK(a.objects[i].address == b.objects[i].address);
      CHECK(a.objects[i].offset == b.objects[i].offset);
    }
    CHECK(a.dedupSegments == b.dedupSegments);
  }
  // Through LOG.hmx: written by the first open, read back by the second.
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("heapman-graph-copies-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "dumps.hml").string();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  replay::ReplayOptions o;
  o.notes = nullptr;
  { replay::Replay first(path, o); }
  replay::Replay second(path, o);
  CHECK_FALSE(second.index().built);
  CHECK(second.tables().dumpCopiesIndexed);
  CHECK(second.tables().dumpCopies == r.tables().dumpCopies);
  GraphSession s(second);
  CHECK(s.at(second.resolve("gc:2")).stats().edges == 7);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a GC without a dump: the error lists the dumped ones and how to record", "[graph]") {
  replay::Replay r(log::LogReader::fromBytes(writeLog("1")), quiet());
  DumpStore store(r.reader());
  try {
    HeapGraph::atGc(r, store, 3);
    FAIL("no error");
  } catch (const GraphError& e) {
    std::string m = e.what();
    CHECK(m.find("no RAM dump at GC 3") != std::string::npos);
    CHECK(m.find("GC 1, 2 (2 dumps)") != std::string::npos);
    CHECK(m.find("--ram-dumps every") != std::string::npos);
  }
}

TEST_CASE("a truncated log's dumps are found by reading the dump chunks", "[graph]") {
  replay::Replay r(log::LogReader::fromBytes(writeLog("1", false)), quiet());
  REQUIRE_FALSE(r.reader().end().complete);
  DumpStore store(r.reader());
  REQUIRE(store.dumpedGcs() == std::vector<uint32_t>{1, 2});
  auto g = HeapGraph::atGc(r, store, 2);
  CHECK(g->stats().edges == 7);
  CHECK(g->stats().unreachable == 1);
}

TEST_CASE("retained by type counts an object once when another of its type dominates it",
          "[graph]") {
  replay::Replay r(log::LogReader::fromBytes(writeLog("1")), quiet());
  replay::FrameNamer namer(r.tables(), false);
  replay::Exclusions ex;
  replay::Attribution a(r.tables(), namer, ex);
  GraphSession s(r);
  uint64_t at = r.resolve("gc:1");
  RetainedResult res = retainedBy(s, a, at, RetainedBy::kType, 0);
  std::map<std::string, RetainedRow> rows;
  for (const auto& row : res.rows) rows[row.name] = row;
  REQUIRE(rows.size() == 3);
  // (gc): A retains A, B and D (80); C is held from three places and retains itself (64); B is
  // inside A's; F is unreachable (0).
  CHECK(rows["(gc)"].objects == 4);
  CHECK(rows["(gc)"].bytes == 32 + 32 + 64 + 16);
  CHECK(rows["(gc)"].retained == 80 + 64);
  CHECK(rows["(gc_atomic)"].retained == 16);
  CHECK(rows["(gc_uncollectable)"].retained == 16);
  CHECK(res.rows.front().name == "(gc)");
  // By object: A first (80), then C (64).
  RetainedResult byObject = retainedBy(s, a, at, RetainedBy::kObject, 2);
  REQUIRE(byObject.rows.size() == 2);
  CHECK(byObject.rows[0].retained == 80);
  CHECK(byObject.rows[1].retained == 64);
  // A point before the dumped GC 1: its graph (the first collection after the point). (A log
  // without dumps: tests/integration/graph.)
  CHECK(retainedBy(s, a, r.resolve("start"), RetainedBy::kType, 0).gc == 1);
}
