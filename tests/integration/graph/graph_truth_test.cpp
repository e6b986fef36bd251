// The heap graph of a real recorded bdwgc program (graph_truth.c) against what the program built:
// the edges out of each of its objects are exactly its pointers, the atomic blob makes none, each
// object is held from the root it was put in, and every object the collector kept is reachable
// from the recorded roots.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "heapman/graph/dominators.h"
#include "heapman/graph/heap_graph.h"
#include "heapman/replay/replay.h"
#include "support/shell.h"

using namespace heapman;
using namespace heapman::graph;

namespace {

// A recorded log opened for its graphs: the replay (no notes on stderr) and its dump store.
struct DumpedLog {
  explicit DumpedLog(const std::string& path) : r(path, quiet()), store(r.reader()) {}
  static replay::ReplayOptions quiet() {
    replay::ReplayOptions o;
    o.notes = nullptr;
    return o;
  }
  replay::Replay r;
  DumpStore store;
};

// Runs `command` (a shell command line: the program, quoted, and its arguments) under heaprec
// with a RAM dump at every collection, into `log`; the run, which must have succeeded.
hmtest::ShellResult recordDumps(const std::string& log, const std::string& command) {
  hmtest::ShellResult run = hmtest::runShell(std::string("'") + GRAPH_HEAPREC +
                                             "' run --ram-dumps every -o '" + log + "' -- " +
                                             command);
  return run;
}

struct Truth {
  uint32_t gc = 0;
  std::map<std::string, uint64_t> at;  // name -> address
  std::string dir, log;
  ~Truth() { hmtest::removeTempDir(dir); }
};

void recordTruth(Truth& t) {
  t.dir = hmtest::makeTempDir("graph");
  t.log = t.dir + "/truth.hml";
  std::string out = t.dir + "/truth.out";
  std::string cmd = std::string("'") + GRAPH_HEAPREC + "' run --ram-dumps every -o '" + t.log +
                    "' -- '" + GRAPH_TRUTH + "' > '" + out + "' 2> '" + t.dir + "/truth.err'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  std::string name, value;
  while (in >> name >> value) {
    if (name == "gc")
      t.gc = static_cast<uint32_t>(std::stoul(value));
    else
      t.at[name] = std::stoull(value, nullptr, 16);
  }
}

// Runs a shell command; its exit status, and its stdout then its stderr in `out`.
int sh(const std::string& cmd, std::string& out) {
  hmtest::ShellResult r = hmtest::runShell(cmd);
  out = r.out + r.err;
  return r.status;
}

const Truth& truth() {
  static Truth t;
  if (t.dir.empty()) recordTruth(t);
  return t;
}

std::multiset<uint64_t> outOf(const HeapGraph& g, uint32_t n) {
  std::multiset<uint64_t> s;
  for (uint32_t t : g.out(n)) s.insert(g.address(t));
  return s;
}

// The root ranges that point to node n.
std::set<log::RootSource> rootsPointingTo(const HeapGraph& g, uint32_t n) {
  std::set<log::RootSource> s;
  for (uint32_t r = 1; r <= g.rootCount(); ++r)
    for (uint32_t t : g.out(r))
      if (t == n) s.insert(g.root(r).source);
  return s;
}

// The thread-stack root ranges that point to node n: their threads (recorder indices).
std::set<uint32_t> stacksPointingTo(const HeapGraph& g, uint32_t n) {
  std::set<uint32_t> s;
  for (uint32_t r = 1; r <= g.rootCount(); ++r)
    if (g.root(r).source == log::RootSource::kThreadStack)
      for (uint32_t t : g.out(r))
        if (t == n) s.insert(g.root(r).thread);
  return s;
}

// Each thread's stack bounds (pthread_getattr_np's, from its ThreadStart record), by index.
std::map<uint32_t, std::pair<uint64_t, uint64_t>> threadStacks(const replay::Replay& r) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> bounds;
  r.reader().forEachRecord([&](const auto& x) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, log::ThreadStart>)
      bounds[x.index] = {x.stackLow, x.stackHigh};
  });
  return bounds;
}

// Every thread-stack root of g lies in its thread's stack and reaches up to its top: the
// collector scans from the stack pointer to the end it was told (Mono's, a few pages under the
// top pthread_getattr_np gives, where glibc keeps the thread's TLS; for the main thread the
// collector's stack bottom, above it). None was cut short at the bottom of the stack, as when the
// copy stopped at Mono's guard pages. Returns the threads with a stack root.
std::set<uint32_t> checkThreadStacks(
    const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& bounds, const HeapGraph& g) {
  std::set<uint32_t> threads;
  for (uint32_t n = 1; n <= g.rootCount(); ++n) {
    if (g.root(n).source != log::RootSource::kThreadStack) continue;
    INFO("gc " << g.gc() << " stack root " << std::hex << g.address(n) << " +" << g.size(n));
    auto t = bounds.find(g.root(n).thread);
    REQUIRE(t != bounds.end());
    auto [low, high] = t->second;
    CHECK(threads.insert(t->first).second);  // one range per thread
    CHECK(g.address(n) >= low);
    CHECK(g.address(n) < high);
    CHECK(g.address(n) + g.size(n) + (64u << 10) >= high);
    CHECK(g.address(n) + g.size(n) <= high + (1u << 20));
  }
  return threads;
}

}  // namespace

TEST_CASE("heap graph of a recorded bdwgc program holds exactly its pointers", "[graph][truth]") {
  const Truth& t = truth();
  REQUIRE(t.gc > 0);
  REQUIRE(t.at.size() == 5 + 7 + 3 + 5);
  DumpedLog opened(t.log);
  auto& [r, store] = opened;
  auto g = HeapGraph::atGc(r, store, t.gc);
  const GraphStats& s = g->stats();
  INFO("objects " << s.objects << " edges " << s.edges << " untracked " << s.untracked
                  << " live not dumped " << s.liveNotDumped << " unreachable " << s.unreachable);
  // The recorder says how the collector was configured; Debian's libgc accepts interior pointers.
  std::string interior;
  for (const auto& [k, v] : r.reader().header().options)
    if (k == "gc_all_interior_pointers") interior = v;
  CHECK(interior == "1");
  CHECK(g->options().interiorPointers);
  CHECK(s.unreachable == 0);
  CHECK(s.unreachableUntracked == 0);
  CHECK(s.liveNotDumped == 0);

  std::map<std::string, uint32_t> node;
  for (const auto& [name, address] : t.at) {
    INFO(name);
    node[name] = g->objectAt(address, false);
    REQUIRE(node[name] != kNoNode);
    REQUIRE(g->address(node[name]) == address);
  }
  auto& at = t.at;
  for (int i = 0; i < 5; ++i) {
    std::multiset<uint64_t> want;
    if (i < 4) want.insert(at.at("list" + std::to_string(i + 1)));
    CHECK(outOf(*g, node["list" + std::to_string(i)]) == want);
  }
  // Preorder: tree0 (tree1 (tree2, tree3), tree4 (tree5, tree6)).
  CHECK(outOf(*g, node["tree0"]) == std::multiset<uint64_t>{at.at("tree1"), at.at("tree4")});
  CHECK(outOf(*g, node["tree1"]) == std::multiset<uint64_t>{at.at("tree2"), at.at("tree3")});
  CHECK(outOf(*g, node["tree4"]) == std::multiset<uint64_t>{at.at("tree5"), at.at("tree6")});
  for (const char* leaf : {"tree2", "tree3", "tree5", "tree6"}) CHECK(g->out(node[leaf]).empty());
  CHECK(outOf(*g, node["cycle0"]) == std::multiset<uint64_t>{at.at("cycle1")});
  CHECK(outOf(*g, node["cycle1"]) == std::multiset<uint64_t>{at.at("cycle2")});
  CHECK(outOf(*g, node["cycle2"]) == std::multiset<uint64_t>{at.at("cycle0")});
  for (const char* leaf : {"static_only", "stack_only", "added_root", "interior", "blob"})
    CHECK(g->out(node[leaf]).empty());
  CHECK_FALSE(g->objectFlags(node["blob"]) & kScan);  // atomic: its 32 pointers make no edge

  // Where each is held from (other roots may hold stale copies on stacks, never in static data).
  using RS = log::RootSource;
  CHECK(rootsPointingTo(*g, node["list0"]).count(RS::kStaticData));
  CHECK(rootsPointingTo(*g, node["tree0"]).count(RS::kStaticData));
  CHECK(rootsPointingTo(*g, node["cycle0"]).count(RS::kStaticData));
  CHECK(rootsPointingTo(*g, node["static_only"]).count(RS::kStaticData));
  CHECK(rootsPointingTo(*g, node["interior"]).count(RS::kStaticData));  // 24 bytes in
  CHECK(rootsPointingTo(*g, node["blob"]).count(RS::kStaticData));
  auto stackOnly = rootsPointingTo(*g, node["stack_only"]);
  CHECK(stackOnly == std::set<RS>{RS::kThreadStack});
  auto added = rootsPointingTo(*g, node["added_root"]);
  CHECK(added.count(RS::kRegistered));
  CHECK_FALSE(added.count(RS::kStaticData));
  // Nothing else points to the objects held only from roots.
  for (const char* only : {"static_only", "stack_only", "added_root", "interior"})
    for (uint32_t n = g->firstObject(); n < g->nodeCount(); ++n)
      for (uint32_t to : g->out(n)) CHECK(to != node[only]);
  // Every one of them is reachable: a path from the roots exists.
  std::vector<bool> seen = g->reachable();
  for (const auto& [name, n] : node) {
    INFO(name);
    CHECK(seen[n]);
  }
}

TEST_CASE("dominators of a recorded program equal the brute-force reference", "[graph][truth]") {
  const Truth& t = truth();
  DumpedLog opened(t.log);
  auto& [r, store] = opened;
  auto g = HeapGraph::atGc(r, store, t.gc);
  std::vector<uint64_t> sizes(g->nodeCount());
  for (uint32_t n = g->firstObject(); n < g->nodeCount(); ++n) sizes[n] = g->size(n);
  DominatorTree d = dominators(g->offsets(), g->targets(), 0, sizes);
  // Reachable without node x: retained(x) = size(x) + what becomes unreachable.
  auto reachWithout = [&](uint32_t x) {
    std::vector<bool> seen(g->nodeCount());
    std::vector<uint32_t> todo{0};
    seen[0] = true;
    while (!todo.empty()) {
      uint32_t v = todo.back();
      todo.pop_back();
      for (uint32_t w : g->out(v))
        if (w != x && !seen[w]) seen[w] = true, todo.push_back(w);
    }
    return seen;
  };
  std::vector<bool> all = reachWithout(kNoNode);
  std::map<std::string, uint32_t> node;
  for (const auto& [name, address] : t.at) node[name] = g->objectAt(address, false);
  for (uint32_t x = 1; x < g->nodeCount(); ++x) {
    if (!all[x]) continue;
    std::vector<bool> without = reachWithout(x);
    uint64_t retained = sizes[x];
    for (uint32_t y = 0; y < g->nodeCount(); ++y)
      if (y != x && all[y] && !without[y]) retained += sizes[y];
    INFO("node " << x);
    REQUIRE(d.retained[x] == retained);
  }
  // The list head retains the whole list; the tree root the tree.
  uint64_t list = 0, tree = 0;
  for (int i = 0; i < 5; ++i) list += g->size(node["list" + std::to_string(i)]);
  for (int i = 0; i < 7; ++i) tree += g->size(node["tree" + std::to_string(i)]);
  CHECK(d.retained[node["list0"]] == list);
  CHECK(d.retained[node["tree0"]] == tree);
  CHECK(d.idom[node["list4"]] == node["list3"]);
}

TEST_CASE("heapman's graph verbs on the recorded program", "[graph][truth]") {
  const Truth& t = truth();
  auto run = [&](const std::string& args, std::string& out) {
    return sh(std::string("'") + GRAPH_HEAPMAN + "' " + args, out);
  };
  char list1[32];
  std::snprintf(list1, sizeof list1, "0x%llx", static_cast<unsigned long long>(t.at.at("list1")));
  char list0[32];
  std::snprintf(list0, sizeof list0, "0x%llx", static_cast<unsigned long long>(t.at.at("list0")));
  std::string out, at = " --at gc:" + std::to_string(t.gc);
  // object: the word at offset 0 of list0 points to list1.
  REQUIRE(run("object '" + t.log + "'" + at + " " + list0 + " --no-symbols", out) == 0);
  CHECK(out.find(std::string(list1) + " (gc)") != std::string::npos);
  // refs --out of list0: exactly list1 at depth 1.
  REQUIRE(run("refs '" + t.log + "'" + at + " " + list0 + " --out --csv - --no-symbols", out) == 0);
  CHECK(out.find(std::string(",") + list1 + ",") != std::string::npos);
  // A point without a dump, an address in no object, a bad regex: exit 2 and what to do.
  std::string plain = t.dir + "/nodump.hml";
  REQUIRE(std::system(("'" + std::string(GRAPH_HEAPREC) + "' run -o '" + plain + "' -- '" +
                       GRAPH_TRUTH + "' >/dev/null 2>&1").c_str()) == 0);
  CHECK(run("objects '" + plain + "' --at start", out) == 2);
  CHECK(out.find("--ram-dumps every") != std::string::npos);
  // A point before a dumped collection: the graph of the first collection after it, named.
  REQUIRE(run("retained '" + t.log + "' --at start --no-symbols", out) == 0);
  CHECK(out.find("point:     gc:") != std::string::npos);
  CHECK(run("object '" + t.log + "'" + at + " 0x10", out) == 2);
  CHECK(out.find("in no object") != std::string::npos);
  CHECK(run("objects '" + t.log + "'" + at + " --type '('", out) == 2);
  CHECK(out.find("bad --type regex") != std::string::npos);
}

// paths: why list4 is alive (the static array -> list0 -> ... -> list4, each step's field), and
// the picture opened by the real tools: Graphviz renders it, the GEXF validates against the 1.3
// XSD, networkx reads both with the same node and edge counts.
TEST_CASE("heapman paths: root paths to DOT and GEXF that the tools open", "[graph][truth]") {
  const Truth& t = truth();
  char list4[32];
  std::snprintf(list4, sizeof list4, "0x%llx", static_cast<unsigned long long>(t.at.at("list4")));
  std::string dot = t.dir + "/paths.dot", gexf = t.dir + "/paths.gexf", out;
  std::string base = std::string("'") + GRAPH_HEAPMAN + "' paths '" + t.log + "' --at gc:" +
                     std::to_string(t.gc) + " --no-symbols ";
  REQUIRE(sh(base + list4 + " --csv - --dot '" + dot + "' --gexf '" + gexf + "'", out) == 0);
  // One path, from the static data of graph_truth through list0..list3, each at field +0 of
  // the one before.
  std::vector<std::string> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.back() == '\r') line.pop_back(), rows.push_back(line);
    else rows.push_back(line);
  std::vector<std::string> steps;
  for (const std::string& r : rows)
    if (r.rfind("1,", 0) == 0) steps.push_back(r);
  INFO(out);
  REQUIRE(steps.size() == 6);
  CHECK(steps[0].find("graph_truth data") != std::string::npos);
  for (int i = 0; i < 5; ++i) {
    char addr[32];
    std::snprintf(addr, sizeof addr, "0x%llx",
                  static_cast<unsigned long long>(t.at.at("list" + std::to_string(i))));
    CHECK(steps[i + 1].find(std::string(",") + addr + ",") != std::string::npos);
    if (i > 0) CHECK(steps[i + 1].find(",+0,") != std::string::npos);
  }
  REQUIRE(sh(std::string("'") + GRAPH_DOT + "' -Tsvg '" + dot + "' -o '" + t.dir + "/p.svg'", out) == 0);
  REQUIRE(sh(std::string("'") + GRAPH_XMLLINT + "' --noout --schema '" + GRAPH_GEXF_XSD + "' '" + gexf + "'",
             out) == 0);
  REQUIRE(sh(std::string("'") + GRAPH_NX_PYTHON + "' '" + GRAPH_CHECK_PY + "' '" + dot + "' '" + gexf + "'",
             out) == 0);
  CHECK(out == "dot 6 5\ngexf 6 5\n");
  // The cycle is held from the thread's stack or a static: a path whatever the start.
  char cycle1[32];
  std::snprintf(cycle1, sizeof cycle1, "0x%llx", static_cast<unsigned long long>(t.at.at("cycle1")));
  REQUIRE(sh(base + cycle1, out) == 0);
  CHECK(out.find("roots reaching them: 0") == std::string::npos);
  // Bad input: an address in no object, a type no object has, both or neither given.
  CHECK(sh(base + "0x10", out) == 2);
  CHECK(out.find("in no object") != std::string::npos);
  CHECK(sh(base + "--type '^no such type$'", out) == 2);
  CHECK(out.find("heapman types") != std::string::npos);
  CHECK(sh(base, out) == 2);
  CHECK(sh(base + list4 + " --dot /dev/full", out) == 1);
  CHECK(out.find("No space left on device") != std::string::npos);
}

// paths --type: the picture merges the listed paths per type and depth, and each of its edges
// counts the paths that take it (the DOT's "xN") with the field they take it by, or none when
// merged pointers come from different fields. Every object's path is listed (--max-paths above
// the objects), so the CSV's steps give each edge's count and fields on their own.
TEST_CASE("heapman paths --type: merged edges count the listed paths through them", "[graph][truth]") {
  const Truth& t = truth();
  std::string dot = t.dir + "/type_paths.dot", out;
  REQUIRE(sh(std::string("'") + GRAPH_HEAPMAN + "' paths '" + t.log + "' --at gc:" +
                 std::to_string(t.gc) + " --type . --max-paths 100000 --no-symbols --csv - --dot '" +
                 dot + "'",
             out) == 0);
  INFO(out);
  // From the CSV (path,step,node,type,field,...): a step is keyed as the picture merges it.
  struct Edge {
    unsigned count = 0;
    std::set<std::string> fields;
  };
  std::map<std::pair<std::string, std::string>, Edge> expected;
  std::istringstream in(out);
  std::string line, lastPath, lastKey;
  size_t paths = 0;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> col;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) col.push_back(c);
    REQUIRE(col.size() >= 5);
    bool root = col[1] == "0";
    std::string key = root ? "root " + col[2] : "type " + col[3] + " @" + col[1];
    if (col[0] != lastPath) {
      ++paths;
      REQUIRE(root);
    } else if (key != lastKey) {
      Edge& e = expected[{lastKey, key}];
      ++e.count;
      e.fields.insert(col[4]);
    }
    lastPath = col[0], lastKey = key;
  }
  REQUIRE(paths >= 15);  // the truth's objects, each its own path
  std::multiset<std::string> want, got;
  for (const auto& [k, e] : expected) {
    std::string field;
    if (e.fields.size() == 1) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "+0x%llx", std::stoull(e.fields.begin()->substr(1)));
      field = hex;
    }
    want.insert(field + " x" + std::to_string(e.count));
  }
  // The DOT's edges: `nA -> nB [label="+0xOFF xN"]`, the field or the count left out when
  // merged or 1.
  std::ifstream d(dot);
  while (std::getline(d, line)) {
    if (line.find(" -> ") == std::string::npos) continue;
    size_t q = line.find("label=\"");
    REQUIRE(q != std::string::npos);
    std::string label = line.substr(q + 7, line.find('"', q + 7) - q - 7);
    std::string field = label.rfind("+0x", 0) == 0 ? label.substr(0, label.find(' ')) : "";
    size_t x = label.find('x', field.size());
    std::string count = x == std::string::npos ? "1" : label.substr(x + 1);
    got.insert(field + " x" + count);
  }
  CHECK(got == want);
  CHECK(want.size() >= 5);
  CHECK(std::any_of(expected.begin(), expected.end(),
                    [](const auto& e) { return e.second.count > 1; }));
}

// graph: the whole graph collapsed per type, opened by the real tools; the truth program's
// objects are of two kinds (gc, gc_atomic) plus its root ranges.
TEST_CASE("heapman graph: the collapsed graph in DOT and GEXF that the tools open", "[graph][truth]") {
  const Truth& t = truth();
  std::string dot = t.dir + "/whole.dot", gexf = t.dir + "/whole.gexf", out;
  std::string cmd = std::string("'") + GRAPH_HEAPMAN + "' graph '" + t.log + "' --at gc:" +
                    std::to_string(t.gc) + " --no-symbols --dot '" + dot + "' --gexf '" + gexf + "'";
  REQUIRE(sh(cmd, out) == 0);
  INFO(out);
  CHECK(out.find("one node per type and root range") != std::string::npos);
  REQUIRE(sh(std::string("'") + GRAPH_DOT + "' -Tsvg '" + dot + "' -o '" + t.dir + "/w.svg'", out) == 0);
  REQUIRE(sh(std::string("'") + GRAPH_XMLLINT + "' --noout --schema '" + GRAPH_GEXF_XSD + "' '" + gexf + "'",
             out) == 0);
  REQUIRE(sh(std::string("'") + GRAPH_NX_PYTHON + "' '" + GRAPH_CHECK_PY + "' '" + dot + "' '" + gexf + "'",
             out) == 0);
  std::istringstream counts(out);
  std::string format;
  size_t dotNodes = 0, dotEdges = 0, gexfNodes = 0, gexfEdges = 0;
  counts >> format >> dotNodes >> dotEdges >> format >> gexfNodes >> gexfEdges;
  CHECK(dotNodes == gexfNodes);
  CHECK(dotEdges == gexfEdges);
  std::ifstream d(dot);
  std::string text((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
  CHECK(text.find("label=\"(gc)\\n") != std::string::npos);
  CHECK(sh(std::string("'") + GRAPH_HEAPMAN + "' graph '" + t.log + "' --at gc:" +
               std::to_string(t.gc),
           out) == 2);  // neither --dot nor --gexf
}

// The C# sample on mono-boehm, with a RAM dump after each level: managed objects are scanned by
// their class's recorded layout (precise edges), every object the collector kept is reachable,
// and the enemies of finished levels are held by the leak the game plants: the static
// ScoreChanged event's delegate list -> each level's closure -> the Level -> its enemies.
TEST_CASE("mono sample: precise managed edges and the leak's root path", "[graph][mono]") {
  const Truth& t = truth();  // for its temporary directory
  std::string log = t.dir + "/mono_game.hml", out;
  REQUIRE(sh(std::string("'") + GRAPH_HEAPREC + "' run --ram-dumps event:level_end -o '" + log +
                 "' -- mono-boehm '" + GRAPH_MONO_GAME + "' 4 300 >/dev/null",
             out) == 0);
  std::string heapman = std::string("'") + GRAPH_HEAPMAN + "' ";
  REQUIRE(sh(heapman + "retained '" + log + "' --at level_end#3 --no-symbols", out) == 0);
  INFO(out);
  // Every object the collector kept is reachable. What used to be left (0-3 objects in some
  // runs: a boxed Int32 the HUD's string concatenation made, an audio buffer, a String[] of the
  // runtime's, each the same object at the same address over many dumps) was held from thread
  // stacks the dump had lost: the audio and finalizer threads' (their range started under
  // Mono's stack guard, and the copy stopped at it) and the main thread's (left out when another
  // thread collected). The stacks are now the ranges the collector scanned (docs/DESIGN.md 2.3).
  size_t at0 = out.find("alive but unreachable: ");
  REQUIRE(at0 != std::string::npos);
  CHECK(std::stoul(out.substr(at0 + 23)) == 0);
  {
    DumpedLog opened(log);
    auto& [r, store] = opened;
    std::vector<uint32_t> gcs = store.dumpedGcs();
    CHECK(gcs.size() == 4);  // one after each level
    auto bounds = threadStacks(r);
    for (uint32_t gc : gcs) {
      auto g = HeapGraph::atGc(r, store, gc);
      INFO("gc " << gc);
      CHECK(g->stats().unreachable == 0);
      // main, audio, finalizer (the last dump's collection runs after the audio thread ended)
      CHECK(checkThreadStacks(bounds, *g).size() >= (gc == gcs.back() ? 2u : 3u));
    }
  }
  CHECK(out.find("managed objects scanned by their class's layout") != std::string::npos);
  REQUIRE(sh(heapman + "paths '" + log + "' --at level_end#3 --type 'Game\\.Enemy$' " +
                 "--max-paths 100 --csv - --no-symbols",
             out) == 0);
  // Some enemy's shortest path runs through the whole chain, in this order.
  size_t at = 0;
  bool chain = true;
  for (const char* step : {"mono_static", "System.Action<System.Int32>", "System.Delegate[]",
                           "Game.Program.<PlayLevel>c__AnonStorey0", "Game.Level",
                           "System.Collections.Generic.List<Game.Enemy>", "Game.Enemy[]",
                           "Game.Enemy"}) {
    at = out.find(step, at);
    chain = chain && at != std::string::npos;
    if (!chain) break;
  }
  CHECK(chain);
  // The static block is named by its class and lists its reference fields by offset.
  CHECK(out.find("static fields of Game.Program: ScoreChanged +0x0") != std::string::npos);
}

// diff and types over two dumps: the objects of dump_diff_truth's two collections compared by
// address and birth, per allocating function: its survivors, the dropped objects the collector
// reclaimed (as its disappearing links say), the new ones, and retained sizes at both points.
TEST_CASE("heapman diff over two dumps: new, survived and freed objects per site", "[graph][truth]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/dump_diff.hml", out;
  hmtest::ShellResult run = recordDumps(log, std::string("'") + GRAPH_DUMP_DIFF_TRUTH + "'");
  out = run.out;  // the program's own lines
  std::map<std::string, unsigned long> said;
  {
    std::istringstream in(out);
    std::string k;
    unsigned long v;
    while (in >> k >> v) said[k] = v;
  }
  REQUIRE(said.count("gc2"));
  const unsigned long collected = said["dropped_collected"];
  INFO("dropped objects the collector reclaimed: " << collected);
  REQUIRE(collected >= 5);  // a stale stack copy may keep one; the log records what happened

  std::string cmd = std::string("'") + GRAPH_HEAPMAN + "' diff '" + log + "' --from gc:" +
                    std::to_string(said["gc1"]) + " --to gc:" + std::to_string(said["gc2"]);
  REQUIRE(sh(cmd + " --by dump-sites --csv -", out) == 0);
  // function,location,new objects,new bytes,survived objects,survived bytes,freed objects,
  // freed bytes,delta bytes,retained A,retained B,delta retained
  std::map<std::string, std::vector<long long>> rows;
  std::istringstream in(out);
  std::string line;
  std::getline(in, line);
  CHECK(line.rfind("function,location,new_objects,", 0) == 0);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    if (cells.size() != 12) continue;
    std::vector<long long> v;
    for (size_t i = 2; i < 12; ++i) v.push_back(std::stoll(cells[i]));
    rows[cells[0]] = v;
  }
  INFO(out);
  REQUIRE(rows.count("keep_old"));
  REQUIRE(rows.count("drop_old"));
  REQUIRE(rows.count("make_new"));
  const std::vector<long long>&keep = rows["keep_old"], &drop = rows["drop_old"],
                            &made = rows["make_new"];
  // new objects, survived objects, freed objects
  CHECK(keep[0] == 0);
  CHECK(keep[2] == 10);
  CHECK(keep[4] == 0);
  CHECK(made[0] == 7);
  CHECK(made[2] == 0);
  CHECK(made[4] == 0);
  CHECK(drop[0] == 0);
  CHECK(drop[2] == 6 - static_cast<long long>(collected));
  CHECK(drop[4] == static_cast<long long>(collected));
  // Each object is held from the static tables only: a site retains exactly its own bytes.
  CHECK(keep[7] == keep[3]);   // retained A = survived bytes
  CHECK(keep[8] == keep[3]);   // retained B
  CHECK(made[7] == 0);
  CHECK(made[8] == made[1]);   // retained B = new bytes
  CHECK(drop[8] == drop[3]);
  CHECK(keep[3] >= 10 * 40);
  CHECK(made[1] >= 7 * 72);
  CHECK(made[6] == made[1]);   // delta bytes

  // types --compare shows the same comparison; a point after the last dump says why not.
  REQUIRE(sh(std::string("'") + GRAPH_HEAPMAN + "' types '" + log + "' --at gc:" +
                 std::to_string(said["gc2"]) + " --compare gc:" + std::to_string(said["gc1"]),
             out) == 0);
  CHECK(out.find("dump-types") != std::string::npos);
  // Its totals are the sums over the sites (the collector's own untracked blocks included: the
  // disappearing links' entries).
  long long sums[3] = {0, 0, 0};
  for (const auto& [name, v] : rows) sums[0] += v[0], sums[1] += v[2], sums[2] += v[4];
  CHECK(sums[0] == 7);
  CHECK(out.find(std::to_string(sums[0]) + " new, " + std::to_string(sums[1]) + " survived, " +
                 std::to_string(sums[2]) + " freed") != std::string::npos);
  REQUIRE(sh(cmd.substr(0, cmd.find(" --from")) + " --from start --to end", out) == 0);
  CHECK(out.find("not compared: B has no RAM dump") != std::string::npos);
}

// Objects held only from memory a custom kind's mark procedure pushes (guile's VM stacks are
// such), or from a range the program pushes itself (ECL's roots): the recorder keeps what
// GC_mark_and_push was given from outside the heap, and the ranges pushed from outside libgc, as
// roots, so they are reachable, from a root of that kind, and nothing alive is left unreachable.
TEST_CASE("roots that only the program's mark and push procedures know are in the graph",
          "[graph][truth]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/mark_proc.hml", out;
  hmtest::ShellResult run = recordDumps(log, std::string("'") + GRAPH_MARK_PROC_TRUTH + "'");
  out = run.out;  // the program's own lines
  std::map<std::string, uint64_t> at;
  uint32_t gc = 0;
  {
    std::istringstream in(out);
    std::string k, v;
    while (in >> k >> v) {
      if (k == "gc")
        gc = static_cast<uint32_t>(std::stoul(v));
      else
        at[k] = std::stoull(v, nullptr, 16);
    }
  }
  REQUIRE(at.size() == 6);
  DumpedLog opened(log);
  auto& [r, store] = opened;
  auto g = HeapGraph::atGc(r, store, gc);
  CHECK(g->stats().unreachable == 0);
  std::vector<bool> seen = g->reachable();
  for (const char* name : {"marked0", "marked1", "marked2"}) {
    INFO(name);
    uint32_t n = g->objectAt(at[name], false);
    REQUIRE(n != kNoNode);
    CHECK(seen[n]);
    // (a stale copy of the address on the collecting thread's stack may point to it too)
    CHECK(rootsPointingTo(*g, n).count(log::RootSource::kMarkProcedure) == 1);
  }
  for (const char* name : {"pushed0", "pushed1"}) {
    INFO(name);
    uint32_t n = g->objectAt(at[name], false);
    REQUIRE(n != kNoNode);
    CHECK(seen[n]);
    CHECK(rootsPointingTo(*g, n).count(log::RootSource::kPushedRange) == 1);
  }
  for (uint32_t root = 1; root <= g->rootCount(); ++root)
    if (g->root(root).source == log::RootSource::kMarkProcedure)
      CHECK(g->root(root).label == "pushed by mark procedures");
}

namespace {

// The program's "name value" lines: numbers in decimal, addresses in hex.
std::map<std::string, uint64_t> programLines(const std::string& out) {
  std::map<std::string, uint64_t> at;
  std::istringstream in(out);
  std::string k, v;
  while (in >> k >> v) at[k] = std::stoull(v, nullptr, 0);
  return at;
}

// Records `program` (no arguments) with a dump at every collection into `log`; its lines.
std::map<std::string, uint64_t> recordProgram(const std::string& log, const char* program) {
  return programLines(recordDumps(log, std::string("'") + program + "'").out);
}

// The graph's finalization-queue root, or kNoNode when the queue was empty.
uint32_t finalizeQueueRoot(const HeapGraph& g) {
  uint32_t found = kNoNode;
  for (uint32_t r = 1; r <= g.rootCount(); ++r)
    if (g.root(r).source == log::RootSource::kFinalizeQueue) {
      CHECK(found == kNoNode);  // one table per collection
      found = r;
    }
  return found;
}

// The addresses of the objects reachable from node `from` (itself excluded).
std::set<uint64_t> reachFrom(const HeapGraph& g, uint32_t from) {
  std::vector<bool> seen(g.nodeCount());
  std::vector<uint32_t> todo{from};
  seen[from] = true;
  std::set<uint64_t> out;
  while (!todo.empty()) {
    uint32_t n = todo.back();
    todo.pop_back();
    for (uint32_t t : g.out(n))
      if (!seen[t]) {
        seen[t] = true;
        out.insert(g.address(t));
        todo.push_back(t);
      }
  }
  return out;
}

}  // namespace

// The finalization queue as a root (finalize_truth.c): objects the collector found unreachable and
// queued for their finalizer are held by the "finalization queue" root, exactly, with what they
// hold, and nothing alive is unreachable; once their finalizer has run they leave it (a
// resurrected object stays alive, held by what resurrected it, not by the queue); objects a
// finalizer allocates from inside libgc's allocator are recorded; the program's own
// await-finalize proc runs as often as without the recorder.
TEST_CASE("the finalization queue is a root that holds exactly the queued objects",
          "[graph][truth]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/finalize.hml";
  hmtest::ShellResult plain = hmtest::runShell(std::string("'") + GRAPH_FINALIZE_TRUTH + "'");
  REQUIRE(plain.status == 0);
  hmtest::ShellResult run = recordDumps(log, std::string("'") + GRAPH_FINALIZE_TRUTH + "'");
  std::map<std::string, uint64_t> at = programLines(run.out), alone = programLines(plain.out);
  // The program's await-finalize proc: called for a, d and g, with and without the recorder; the
  // getter gives the program its own proc back.
  CHECK(alone.at("await") == 3);
  CHECK(at.at("await") == alone.at("await"));
  CHECK(at.at("mine") == 1);
  CHECK(at.at("finalized") == 3);

  DumpedLog opened(log);
  auto& [r, store] = opened;
  {  // collection 1: a and d queued; b, c held by a, e by d; dd, d's finalizer's client data
    auto g = HeapGraph::atGc(r, store, static_cast<uint32_t>(at.at("gc1")));
    CHECK(g->stats().unreachable == 0);
    uint32_t q = finalizeQueueRoot(*g);
    REQUIRE(q != kNoNode);
    CHECK(g->root(q).label == "finalization queue");
    CHECK(outOf(*g, q) == std::multiset<uint64_t>{at.at("a"), at.at("d"), at.at("dd")});
    CHECK(reachFrom(*g, q) == std::set<uint64_t>{at.at("a"), at.at("b"), at.at("c"), at.at("d"),
                                                 at.at("e"), at.at("dd")});
    // finalizable, still held: not queued, nor its client data
    CHECK(reachFrom(*g, q).count(at.at("k")) == 0);
    CHECK(reachFrom(*g, q).count(at.at("kd")) == 0);
    // paths name the root
    std::string out;
    char c[32];
    std::snprintf(c, sizeof c, "0x%llx", static_cast<unsigned long long>(at.at("c")));
    REQUIRE(sh(std::string("'") + GRAPH_HEAPMAN + "' paths '" + log + "' --at gc:" +
                   std::to_string(at.at("gc1")) + " " + c + " --no-symbols",
               out) == 0);
    CHECK(out.find("finalization queue") != std::string::npos);
  }
  {  // collection 2: a's and d's finalizers ran (a resurrected), g queued
    auto g = HeapGraph::atGc(r, store, static_cast<uint32_t>(at.at("gc2")));
    CHECK(g->stats().unreachable == 0);
    uint32_t q = finalizeQueueRoot(*g);
    REQUIRE(q != kNoNode);
    CHECK(outOf(*g, q) == std::multiset<uint64_t>{at.at("g")});
    CHECK(reachFrom(*g, q) == std::set<uint64_t>{at.at("g"), at.at("h")});
    CHECK(g->objectAt(at.at("a"), false) != kNoNode);  // alive: resurrected
    CHECK(g->objectAt(at.at("d"), false) == kNoNode);  // freed
    CHECK(g->objectAt(at.at("e"), false) == kNoNode);
    CHECK(g->objectAt(at.at("dd"), false) == kNoNode);
    CHECK(g->objectAt(at.at("kd"), false) != kNoNode);  // k's registration holds it still
  }
  {  // collection 3: g's finalizer ran from inside the allocator and allocated f
    auto g = HeapGraph::atGc(r, store, static_cast<uint32_t>(at.at("gc3")));
    CHECK(g->stats().unreachable == 0);
    CHECK(finalizeQueueRoot(*g) == kNoNode);
    uint32_t f = g->objectAt(at.at("f"), false);
    REQUIRE(f != kNoNode);
    CHECK(g->objectInfo(f) != 0);  // recorded: the allocation is in the log
  }
}

// The same on mono-boehm (MonoTruth.exe finalize 50): 50 dropped Truth.Finalizable objects, each
// holding a Probe[], are queued by one collection (their finalizers run on Mono's finalizer
// thread after it): the queue root points to exactly 50 objects, which hold exactly the 50
// payloads, and nothing alive is unreachable. After the finalizers ran (gc_finalizing_object)
// the next collection frees them all and lists no queue.
TEST_CASE("mono: the finalization queue holds exactly the objects awaiting their finalizer",
          "[graph][mono]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/mono_finalize.hml";
  hmtest::ShellResult run =
      recordDumps(log, std::string("mono-boehm '") + GRAPH_MONO_TRUTH + "' finalize 50");
  std::set<uint64_t> payloads;
  uint32_t gc = 0, gc2 = 0;
  {
    std::istringstream in(run.out);
    std::string k, v;
    while (in >> k >> v) {
      if (k == "payload") payloads.insert(std::stoull(v, nullptr, 16));
      if (k == "gc") gc = static_cast<uint32_t>(std::stoul(v));
      if (k == "gc2") gc2 = static_cast<uint32_t>(std::stoul(v));
    }
  }
  REQUIRE(payloads.size() == 50);
  CHECK(run.out.find("finalized 50") != std::string::npos);
  DumpedLog opened(log);
  auto& [r, store] = opened;
  {
    auto g = HeapGraph::atGc(r, store, gc);
    CHECK(g->stats().unreachable == 0);
    uint32_t q = finalizeQueueRoot(*g);
    REQUIRE(q != kNoNode);
    std::multiset<uint64_t> queued = outOf(*g, q);
    CHECK(queued.size() == 50);
    std::set<uint64_t> held = reachFrom(*g, q);
    for (uint64_t a : queued) held.erase(a);
    CHECK(held == payloads);
  }
  {
    auto g = HeapGraph::atGc(r, store, gc2);
    CHECK(finalizeQueueRoot(*g) == kNoNode);
    for (uint64_t a : payloads) CHECK(g->objectAt(a, false) == kNoNode);
  }
}

namespace {

// The two "held only by waiting threads' stacks" cases: at the program's "gc" line's collection
// nothing alive is unreachable, at least `stacks` thread-stack roots each cover their thread's
// stack in use, and the "main" and "worker" objects are each reachable from their own thread's
// stack root, not the other's.
void checkHeldByOwnStacks(const std::string& log, std::map<std::string, uint64_t> at,
                          size_t stacks) {
  REQUIRE(at.count("main"));
  REQUIRE(at.count("worker"));
  REQUIRE(at.count("gc"));
  DumpedLog opened(log);
  auto& [r, store] = opened;
  auto g = HeapGraph::atGc(r, store, static_cast<uint32_t>(at["gc"]));
  CHECK(g->stats().unreachable == 0);
  CHECK(checkThreadStacks(threadStacks(r), *g).size() >= stacks);
  uint32_t mine = g->objectAt(at["main"], false), its = g->objectAt(at["worker"], false);
  REQUIRE(mine != kNoNode);
  REQUIRE(its != kNoNode);
  std::set<uint32_t> mainStacks = stacksPointingTo(*g, mine);
  std::set<uint32_t> workerStacks = stacksPointingTo(*g, its);
  CHECK(!mainStacks.empty());
  CHECK(!workerStacks.empty());
  CHECK(mainStacks != workerStacks);  // each object on its own thread's stack
}

}  // namespace

// The same on a bdwgc program (stack_threads_truth.c): the main thread's and a worker's objects,
// held only by their locals while a third thread collects, are each reachable from their own
// thread's stack root, which reaches the stack's top.
TEST_CASE("bdwgc: objects held only by waiting threads' stacks are reachable from them",
          "[graph][truth]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/stack_threads.hml";
  std::map<std::string, uint64_t> at = recordProgram(log, GRAPH_STACK_THREADS_TRUTH);
  checkHeldByOwnStacks(log, at, 3);  // main, worker, collector
}

// A thread that flips the stack words holding its objects the moment the world restarts
// (stack_race_truth.c): the dump must hold its stack as the collector scanned it, copied while the
// world was still stopped. Copied after the restart (before 2026-11-26), 9 of 20 collections had
// 1-7 of its objects alive but unreachable.
TEST_CASE("bdwgc: a stack that changes as the world restarts is dumped as the collector saw it",
          "[graph][truth]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/stack_race.hml";
  std::map<std::string, uint64_t> at = recordProgram(log, GRAPH_STACK_RACE_TRUTH);
  REQUIRE(at.count("gcs"));
  REQUIRE(at["gcs"] > 20);
  DumpedLog opened(log);
  auto& [r, store] = opened;
  // The program's 20 collections after its worker started: the worker's words point to some of
  // the 8 objects of the round at most of them (the half of the words that held an address when
  // the world stopped); each such object is alive, and reachable.
  uint64_t held = 0;
  for (auto gc = static_cast<uint32_t>(at["gcs"] - 19); gc <= at["gcs"]; ++gc) {
    INFO("gc " << gc);
    auto g = HeapGraph::atGc(r, store, gc);
    CHECK(g->stats().unreachable == 0);
    std::set<uint32_t> fromWorker;
    for (uint32_t n = 1; n <= g->rootCount(); ++n)
      if (g->root(n).source == log::RootSource::kThreadStack && g->root(n).thread != 0)
        for (uint32_t v : g->out(n))
          if (v >= g->firstObject() && !(g->objectFlags(v) & kUntracked) && g->size(v) >= 64 &&
              g->size(v) < 128)  // GC_malloc(64): 80 bytes with interior pointers (1 extra byte)
            fromWorker.insert(v);
    CHECK(fromWorker.size() <= 8);
    held += fromWorker.size();
  }
  CHECK(held >= 8);
}

// A thread waiting inside GC_do_blocking (blocked_thread_truth.c) is not suspended, so no thread
// event names it, but the collector scans its stack: the object only its local holds is reachable
// from that stack. Before the recorder followed GC_do_blocking, the stack was missing from the
// roots and the object was alive but unreachable (guile's waiting threads: 3 objects a dump).
TEST_CASE("bdwgc: an object held only by a thread waiting in GC_do_blocking is reachable",
          "[graph][truth]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/blocked_thread.hml";
  std::map<std::string, uint64_t> at = recordProgram(log, GRAPH_BLOCKED_THREAD_TRUTH);
  REQUIRE(at.count("worker"));
  REQUIRE(at.count("gc"));
  DumpedLog opened(log);
  auto& [r, store] = opened;
  auto g = HeapGraph::atGc(r, store, static_cast<uint32_t>(at["gc"]));
  CHECK(g->stats().unreachable == 0);
  uint32_t its = g->objectAt(at["worker"], false);
  REQUIRE(its != kNoNode);
  CHECK(!stacksPointingTo(*g, its).empty());
}

// Objects held only by the locals of threads that wait while a third thread collects
// (MonoTruth.exe stackheld): each is reachable from its own thread's stack root, every stack
// root is the whole stack in use, and nothing alive is unreachable. Before the stacks were read
// from the collector's thread table, the main thread's stack was left out here (mincore over its
// mostly unmapped reservation failed), and with it the main thread's array and the program's
// arguments.
TEST_CASE("mono: objects held only by waiting threads' stacks are reachable from them",
          "[graph][mono]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/mono_stackheld.hml";
  hmtest::ShellResult run =
      recordDumps(log, std::string("mono-boehm '") + GRAPH_MONO_TRUTH + "' stackheld");
  std::map<std::string, uint64_t> at;  // its "main", "worker" and "gc" lines (Mono adds others)
  {
    std::istringstream in(run.out);
    std::string line, k, v;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      if (words >> k >> v && (k == "main" || k == "worker" || k == "gc"))
        at[k] = std::stoull(v, nullptr, 0);
    }
  }
  checkHeldByOwnStacks(log, at, 4);  // main, worker, collector, finalizer
}

// Under threads (finalize_threads.c: 4 workers register finalizers and drop objects while a
// finalizer thread runs GC_invoke_finalizers whenever something is queued, collections on any
// thread): the program runs to its end, and at every dumped collection each word of the
// finalization queue's table is an object the collector kept (a listed object or client data
// whose entry outlived it would point to no object, or to a newer one at its address).
TEST_CASE("the finalization queue under threads lists only objects the collector kept",
          "[graph][truth]") {
  const Truth& t = truth();  // for its directory
  std::string log = t.dir + "/finalize_threads.hml";
  std::map<std::string, uint64_t> at = recordProgram(log, GRAPH_FINALIZE_THREADS);
  CHECK(at.at("registered") == 160000);
  // (a few of the last objects may stay alive through a stale register of the main thread)
  CHECK(at.at("finalized") + 8 >= at.at("registered"));
  DumpedLog opened(log);
  auto& [r, store] = opened;
  size_t withQueue = 0, listed = 0;
  for (uint32_t gc : store.dumpedGcs()) {
    auto g = HeapGraph::atGc(r, store, gc);
    uint32_t q = finalizeQueueRoot(*g);
    if (q == kNoNode) continue;
    INFO("gc " << gc);
    ++withQueue;
    listed += g->size(q) / 8;
    // one edge per word, each into an object (objects and their client data: starts here)
    CHECK(g->out(q).size() == g->size(q) / 8);
    std::span<const uint8_t> words = g->bytes(q);
    size_t stale = 0;
    for (size_t i = 0; i + 8 <= words.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, words.data() + i, 8);
      uint32_t n = g->objectAt(w, false);
      stale += n == kNoNode || g->address(n) != w;
    }
    CHECK(stale == 0);
  }
  INFO("dumps with a queue " << withQueue << ", words listed " << listed);
  CHECK(withQueue > 0);
}
