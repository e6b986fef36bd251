// Mono layer: MonoTruth.exe (progs/MonoTruth.cs) and the sample MonoGame.exe run on mono-boehm
// under `heaprec run`. The log must agree with what the program knows about itself: every probe
// collected in the collection its long weak reference says (and no other object of its class),
// exact per-class counts with generic and nested names, managed stacks naming the calling
// methods (also after exceptions unwound through instrumented frames), custom events and frames
// in order with their managed stacks, and the program's output unchanged.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "recorder_support.h"

namespace {

using namespace hmrec;

const char* const kMono = "mono-boehm";

// What one log says about managed objects.
struct ManagedLog {
  std::map<uint32_t, std::string> types;    // TypeDef id -> name
  std::map<std::string, TypeDef> typeDefs;  // by name
  std::map<uint32_t, std::string> methods;  // MethodDef id -> name
  std::unordered_map<uint32_t, StackNode> nodes;
  std::vector<Alloc> allocs;                // managed allocations, in log order
  // Per allocation (same index as allocs): the GC that collected it, 0 if none did.
  std::vector<uint32_t> deathGc;
  std::vector<CustomEvent> events;          // custom events
  std::vector<std::string> order;           // event names and "#frame" for frame marks, in order
  uint64_t gcBegins = 0, gcEnds = 0, rootSets = 0, jitRanges = 0, collectedUnknown = 0;
  uint64_t nativeAllocs = 0;
  std::vector<GcHandle> handles;
  std::vector<Finalize> finalized;
  std::set<RootSource> rootSources;          // of RootRange records
  std::map<uint32_t, std::string> strings;   // LogString id -> text
  Header header;

  std::string typeOf(const Alloc& a) const {
    auto it = types.find(a.typeId);
    return it == types.end() ? "" : it->second;
  }
  // Method names of a stack, leaf first; "?" for a frame that is not a defined managed method.
  std::vector<std::string> frames(uint32_t stackId) const {
    std::vector<std::string> out;
    for (uint32_t id = stackId; id != 0;) {
      auto n = nodes.find(id);
      if (n == nodes.end()) break;
      auto m = n->second.managed ? methods.find(static_cast<uint32_t>(n->second.frame)) : methods.end();
      out.push_back(m == methods.end() ? "?" : m->second);
      id = n->second.parent;
    }
    return out;
  }
};

ManagedLog readManagedLog(const std::string& path) {
  ManagedLog m;
  LogReader reader = LogReader::open(path);
  m.header = reader.header();
  std::unordered_map<uint64_t, size_t> live;  // address -> index in allocs
  std::map<uint32_t, std::vector<uint64_t>> pending;
  reader.forEachRecord([&](const auto& r) {
    using T = std::decay_t<decltype(r)>;
    if constexpr (std::is_same_v<T, Alloc>) {
      if (r.heap != HeapKind::kManaged) {
        ++m.nativeAllocs;
        return;
      }
      live[r.address] = m.allocs.size();
      m.allocs.push_back(r);
      m.deathGc.push_back(0);
    } else if constexpr (std::is_same_v<T, TypeDef>) {
      m.types[r.id] = r.name;
      m.typeDefs[r.name] = r;
    } else if constexpr (std::is_same_v<T, LogString>) {
      m.strings[r.id] = r.text;
    } else if constexpr (std::is_same_v<T, MethodDef>) {
      m.methods[r.id] = r.name;
    } else if constexpr (std::is_same_v<T, StackNode>) {
      m.nodes[r.id] = r;
    } else if constexpr (std::is_same_v<T, Collected>) {
      for (uint64_t a : r.addresses) pending[r.gcNumber].push_back(a);
    } else if constexpr (std::is_same_v<T, GcBegin>) {
      ++m.gcBegins;
    } else if constexpr (std::is_same_v<T, GcEnd>) {
      ++m.gcEnds;
      for (uint64_t a : pending[r.gcNumber]) {
        auto it = live.find(a);
        if (it == live.end()) {
          ++m.collectedUnknown;
          continue;
        }
        m.deathGc[it->second] = r.gcNumber;
        live.erase(it);
      }
      pending.erase(r.gcNumber);
    } else if constexpr (std::is_same_v<T, RootSet>) {
      ++m.rootSets;
    } else if constexpr (std::is_same_v<T, RootRange>) {
      m.rootSources.insert(r.source);
    } else if constexpr (std::is_same_v<T, JitRange>) {
      ++m.jitRanges;
    } else if constexpr (std::is_same_v<T, CustomEvent>) {
      m.events.push_back(r);
    } else if constexpr (std::is_same_v<T, GcHandle>) {
      m.handles.push_back(r);
    } else if constexpr (std::is_same_v<T, Finalize>) {
      m.finalized.push_back(r);
    }
  });
  // Event names (LogString ids) and their place among frame marks.
  Log log = readLog(path);
  for (const Record& r : log.records) {
    if (const auto* e = std::get_if<CustomEvent>(&r)) m.order.push_back(eventName(log, *e));
    if (std::holds_alternative<FrameMark>(r)) m.order.push_back("#frame");
  }
  return m;
}

struct ProbeTruth {
  uint64_t address;
  int lo = -1, hi = -1;  // died in a GC numbered in (lo, hi]; hi < 0: alive at the end
};

// Compares the probes' fates with the log's Truth.Probe[] allocations, address by address in
// allocation order (an address is reused only after its previous probe died).
void checkProbes(const std::string& out, const ManagedLog& log) {
  std::map<uint64_t, std::vector<ProbeTruth>> truth;
  size_t probes = 0, died = 0;
  for (const std::string& l : lines(out)) {
    std::vector<std::string> f = fields(l);
    if (f.empty() || f[0] != "probe") continue;
    ProbeTruth p{number(f[1])};
    if (f.size() == 4) {
      p.lo = static_cast<int>(number(f[2]));
      p.hi = static_cast<int>(number(f[3]));
      ++died;
    }
    truth[p.address].push_back(p);
    ++probes;
  }
  REQUIRE(probes > 0);
  std::map<uint64_t, std::vector<uint32_t>> seen;  // address -> death GC per occurrence
  size_t logged = 0;
  for (size_t i = 0; i < log.allocs.size(); ++i)
    if (log.typeOf(log.allocs[i]) == "Truth.Probe[]") {
      seen[log.allocs[i].address].push_back(log.deathGc[i]);
      ++logged;
    }
  INFO("probes: program " << probes << " (" << died << " died), log " << logged);
  REQUIRE(logged == probes);
  size_t wrong = 0;
  std::string first;
  for (auto& [address, fates] : truth) {
    const std::vector<uint32_t>& s = seen[address];
    for (size_t k = 0; k < fates.size(); ++k) {
      uint32_t gc = k < s.size() ? s[k] : UINT32_MAX;
      const ProbeTruth& t = fates[k];
      bool ok = t.hi < 0 ? gc == 0
                         : gc != UINT32_MAX && static_cast<int>(gc) > t.lo && static_cast<int>(gc) <= t.hi;
      if (!ok && wrong++ == 0)
        first = "probe " + std::to_string(address) + " #" + std::to_string(k) + ": truth (" +
                std::to_string(t.lo) + ", " + std::to_string(t.hi) + "], log GC " +
                (gc == UINT32_MAX ? std::string("none") : std::to_string(gc));
    }
  }
  INFO(first);
  CHECK(wrong == 0);
  CHECK(died * 10 >= probes * 7);  // most probes died: the check is about real collections

  // Each probe's WeakReference is a weak-track-resurrection GC handle on it, created once.
  std::map<uint64_t, uint64_t> weakHandles;
  for (const GcHandle& h : log.handles)
    if (h.created && h.type == GcHandleType::kWeakTrackResurrection) ++weakHandles[h.address];
  size_t probeHandles = 0;
  for (auto& [address, fates] : truth) probeHandles += std::min<uint64_t>(weakHandles[address], fates.size());
  CHECK(probeHandles == probes);

  // Finalizers the program saw run before its "finalized" event: the log announced each of them.
  uint64_t programFinalized = 0;
  for (const std::string& l : lines(out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 2 && f[0] == "finalized") programFinalized = number(f[1]);
  }
  uint64_t eventSeq = UINT64_MAX;
  for (const CustomEvent& e : log.events)
    if (log.strings.count(e.nameId) && log.strings.at(e.nameId) == "finalized") eventSeq = e.ev.seq;
  REQUIRE(eventSeq != UINT64_MAX);
  std::set<uint64_t> finalizableAddresses;
  for (const Alloc& a : log.allocs)
    if (log.typeOf(a) == "Truth.Finalizable") finalizableAddresses.insert(a.address);
  uint64_t logFinalized = 0;
  for (const Finalize& f : log.finalized)
    logFinalized += f.ev.seq < eventSeq && finalizableAddresses.count(f.address);
  CHECK(programFinalized > 0);
  CHECK(logFinalized >= programFinalized);
}

}  // namespace

TEST_CASE("mono: classes, stacks, events and collected sets of one thread", "[recorder][mono]") {
  TempDir dir;
  Recording rec = record(dir, "mono_all", {kMono, HMREC_MONO_TRUTH, "all", "2000", "6"});
  requireRecorded(rec);
  ManagedLog log = readManagedLog(rec.logPath);

  // The header names the runtime; the runtime's own mallocs are not recorded by default.
  bool mono = false;
  for (const Runtime& r : log.header.runtimes) mono |= r.kind == Runtime::Kind::kMono;
  CHECK(mono);
  CHECK(log.nativeAllocs == 0);

  // Exact counts of the program's own classes, generic and nested names spelled out.
  std::map<std::string, uint64_t> counts;
  for (const Alloc& a : log.allocs) ++counts[log.typeOf(a)];
  uint64_t classLines = 0;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() != 3 || f[0] != "class") continue;
    ++classLines;
    INFO("class " << f[1]);
    CHECK(counts[f[1]] == number(f[2]));
  }
  CHECK(classLines == 4);

  // Every Leaf comes from Chain.C, called by B, A and Program.Stacks, though exceptions
  // unwound six frames deep before each batch.
  uint64_t leaves = 0, rightStacks = 0;
  std::string firstWrong;
  for (const Alloc& a : log.allocs) {
    if (log.typeOf(a) != "Truth.Leaf") continue;
    ++leaves;
    std::vector<std::string> f = log.frames(a.stackId);
    bool ok = f.size() >= 5 && f[0] == "Truth.Chain:C (int)" && f[1] == "Truth.Chain:B (int)" &&
              f[2] == "Truth.Chain:A (int)" && f[3] == "Truth.Program:Stacks ()" &&
              f[4] == "Truth.Program:Main (string[])";
    rightStacks += ok;
    if (!ok && firstWrong.empty())
      for (const std::string& s : f) firstWrong += s + " <- ";
  }
  INFO("first wrong stack: " << firstWrong);
  CHECK(leaves == 500);
  CHECK(rightStacks == leaves);

  // Events and frames in program order, each event with the managed stack that raised it.
  // (then the truth part's "finalized")
  std::vector<std::string> expected{"first", "#frame", "second", "#frame", "third", "finalized"};
  CHECK(log.order == expected);
  REQUIRE(log.events.size() == 4);
  CHECK(log.events[1].payload == std::vector<uint8_t>{1, 2, 3, 4});
  for (const CustomEvent& e : std::vector<CustomEvent>(log.events.begin(), log.events.begin() + 3)) {
    std::vector<std::string> f = log.frames(e.stackId);
    CHECK(std::find(f.begin(), f.end(), "Truth.Program:Events ()") != f.end());
  }

  // Collections, root registrations with their sources, JIT'ed code.
  CHECK(log.gcBegins == log.gcEnds);
  CHECK(log.rootSets == log.gcEnds);
  CHECK(log.gcEnds >= 6);
  CHECK(log.rootSources.count(RootSource::kMonoStatic) == 1);
  CHECK(log.jitRanges >= log.methods.size() / 2);
  CHECK(log.collectedUnknown == 0);
  checkProbes(rec.result.out, log);
  CHECK(summarizeLog(rec.logPath).gcs == log.gcEnds);
}

TEST_CASE("mono: collected sets equal weak-reference ground truth, 4 threads",
          "[recorder][mono]") {
  TempDir dir;
  Recording rec = record(dir, "mono_truth", {kMono, HMREC_MONO_TRUTH, "truth", "4", "1500", "6"});
  requireRecorded(rec);
  ManagedLog log = readManagedLog(rec.logPath);
  CHECK(log.collectedUnknown == 0);
  checkProbes(rec.result.out, log);
}

TEST_CASE("mono: the sample game's output is unchanged, with and without stacks",
          "[recorder][mono]") {
  TempDir dir;
  RunResult plain = run(dir, "game_plain", {"/usr/bin/env", kMono, HMREC_MONO_GAME, "3", "200"});
  REQUIRE(plain.status == 0);
  Recording rec = record(dir, "game", {kMono, HMREC_MONO_GAME, "3", "200"});
  requireRecorded(rec);
  CHECK(rec.result.out == plain.out);
  Recording bare = record(dir, "game_nostacks", {kMono, HMREC_MONO_GAME, "3", "200"},
                          {"--mono-stacks", "off"});
  requireRecorded(bare);
  CHECK(bare.result.out == plain.out);

  ManagedLog withStacks = readManagedLog(rec.logPath), without = readManagedLog(bare.logPath);
  // The game allocates the same objects of its own classes either way; only stacks differ.
  auto own = [](const ManagedLog& m) {
    std::map<std::string, uint64_t> c;
    for (const Alloc& a : m.allocs)
      if (m.typeOf(a).rfind("Game.", 0) == 0) ++c[m.typeOf(a)];
    return c;
  };
  CHECK(own(withStacks) == own(without));
  CHECK(own(withStacks)["Game.Enemy"] == 600);
  uint64_t stackless = 0;
  for (const Alloc& a : without.allocs) stackless += a.stackId == 0;
  CHECK(stackless == without.allocs.size());
  uint64_t withStack = 0;
  for (const Alloc& a : withStacks.allocs)
    withStack += !withStacks.frames(a.stackId).empty() && withStacks.frames(a.stackId)[0] != "?";
  CHECK(withStack * 10 >= withStacks.allocs.size() * 9);
  // Methods that cannot allocate are left uninstrumented (hooks/mono/stacks.cpp, mayAllocate): the stacks of
  // the game's own objects are the same as with every method instrumented.
  Recording all;
  {
    ScopedEnv allMethods("HEAPMAN_MONO_ALL_METHODS", "1");
    all = record(dir, "game_all", {kMono, HMREC_MONO_GAME, "3", "200"});
  }
  requireRecorded(all);
  ManagedLog everyMethod = readManagedLog(all.logPath);
  auto stacksOf = [](const ManagedLog& m) {
    std::map<std::string, uint64_t> c;
    for (const Alloc& a : m.allocs) {
      if (m.typeOf(a).rfind("Game.", 0) != 0) continue;
      std::string key = m.typeOf(a);
      for (const std::string& f : m.frames(a.stackId)) key += " <- " + f;
      ++c[key];
    }
    return c;
  };
  CHECK(stacksOf(withStacks) == stacksOf(everyMethod));
  CHECK(stacksOf(withStacks).size() >= 5);

  std::vector<std::string> levels;
  for (const std::string& e : withStacks.order)
    if (e != "#frame") levels.push_back(e);
  CHECK(levels == std::vector<std::string>{"level_start", "level_end", "level_start", "level_end",
                                           "level_start", "level_end"});
}

// RAM dumps at every collection: each kept array with the bytes the program wrote (MonoArray
// header, then the elements), a thread stack, Mono's registered static roots. With the runtime's
// own mallocs recorded too (--mono-malloc).
TEST_CASE("mono: RAM dumps hold the live objects' bytes, roots and stacks", "[recorder][mono]") {
  TempDir dir;
  const int kObjects = 100;
  Recording rec = record(dir, "mono_dump", {kMono, HMREC_MONO_TRUTH, "dump", std::to_string(kObjects)},
                         {"--ram-dumps", "every", "--mono-malloc"});
  requireRecorded(rec);
  // --mono-malloc: the runtime's own mallocs are in the log too, beside the managed heap.
  ManagedLog managed = readManagedLog(rec.logPath);
  CHECK(managed.nativeAllocs > 1000);
  CHECK(managed.allocs.size() > kObjects);
  std::map<uint64_t, uint32_t> objects;  // address -> i
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 3 && f[0] == "object") objects[number(f[1])] = static_cast<uint32_t>(number(f[2]));
  }
  REQUIRE(objects.size() == kObjects);
  uint32_t lastGc = lastGcNumber(rec.logPath);
  REQUIRE(lastGc > 0);
  Dump dump = readDump(rec.logPath, lastGc);
  uint64_t found = 0, rightBytes = 0;
  bool stack = false, staticRoot = false;
  for (const RamSegment& s : dump.segments) {
    stack |= s.kind == SegmentKind::kThreadStack && s.length > 0;
    staticRoot |= s.kind == SegmentKind::kStaticRoot && s.length > 0;
  }
  for (const auto& [address, i] : objects) {
    std::optional<std::vector<uint8_t>> b = dump.read(address, 32 + 16 * 4);
    if (!b) continue;
    ++found;
    uint64_t length = 0;
    std::memcpy(&length, b->data() + 24, 8);
    bool ok = length == 16;
    for (uint32_t j = 0; ok && j < 16; ++j) {
      int32_t v;
      std::memcpy(&v, b->data() + 32 + 4 * j, 4);
      ok = v == static_cast<int32_t>(i * 16 + j);
    }
    rightBytes += ok;
  }
  CHECK(found == kObjects);
  CHECK(rightBytes == kObjects);
  CHECK(stack);
  CHECK(staticRoot);
}

#ifdef HMREC_MCS_EXE
// A large real C# program nobody here wrote: Mono's C# compiler compiles the sample game under the
// recorder with the same messages, into an assembly that behaves the same, and the log verifies.
TEST_CASE("mono: the C# compiler runs unchanged under the recorder", "[recorder][mono]") {
  TempDir dir;
  const std::string sources = HMREC_MONO_SOURCES;
  auto compile = [&](const std::string& out) {
    return std::vector<std::string>{kMono, HMREC_MCS_EXE, "-out:" + dir.file(out),
                                    sources + "/Game.cs", sources + "/HeapMan.cs"};
  };
  std::vector<std::string> plainCompile = compile("plain.exe");
  plainCompile.insert(plainCompile.begin(), "/usr/bin/env");
  RunResult plain = run(dir, "mcs_plain", plainCompile);
  REQUIRE(plain.status == 0);
  Recording rec = record(dir, "mcs", compile("recorded.exe"));
  requireRecorded(rec);
  CHECK(rec.result.out == plain.out);
  RunResult a = run(dir, "game_a", {"/usr/bin/env", kMono, dir.file("plain.exe"), "2", "50"});
  RunResult b = run(dir, "game_b", {"/usr/bin/env", kMono, dir.file("recorded.exe"), "2", "50"});
  CHECK(a.status == 0);
  CHECK(b.status == 0);
  CHECK(a.out == b.out);
  LogSummary sum = summarizeLog(rec.logPath);
  CHECK(sum.gcs > 0);
  ManagedLog log = readManagedLog(rec.logPath);
  CHECK(log.allocs.size() > 50000);
  CHECK(log.methods.size() > 1000);
  CHECK(log.collectedUnknown == 0);
  uint64_t withStack = 0;
  for (const Alloc& al : log.allocs) withStack += al.stackId != 0;
  CHECK(withStack * 10 >= log.allocs.size() * 9);

  // The first query on the fresh log reads it only as far as its point (a third of the way):
  // the chunks the footer marks as naming code (modules, JIT ranges, methods) are read first, so
  // its managed and JIT'ed frames are named as the whole log's index names them.
  const std::string at = "seq:" + std::to_string(sum.firstSeq + (sum.lastSeq - sum.firstSeq) / 3);
  RunResult first = run(dir, "first", {HMREC_HEAPMAN, "blame", rec.logPath, "--at", at,
                                       "--top", "40", "--no-symbols"});
  REQUIRE(first.status == 0);
  CHECK_FALSE(std::filesystem::exists(rec.logPath + ".hmx"));  // no whole pass, no index
  REQUIRE(run(dir, "churn", {HMREC_HEAPMAN, "churn", rec.logPath}).status == 0);
  REQUIRE(std::filesystem::exists(rec.logPath + ".hmx"));
  RunResult indexed = run(dir, "indexed", {HMREC_HEAPMAN, "blame", rec.logPath, "--at", at,
                                           "--top", "40", "--no-symbols"});
  REQUIRE(indexed.status == 0);
  CHECK(first.out == indexed.out);
  CHECK(first.out.find("[managed]") != std::string::npos);
}
#endif

// Threads come and go (a thread pool): each one's shadow stack (2 MiB of address space), ring
// and birth queue go with it, so the process's address space does not grow with the number of
// threads it has had.
TEST_CASE("mono: short-lived threads leave no mappings behind", "[recorder][mono]") {
  TempDir dir;
  auto vmAfter = [&](int threads) {
    Recording rec = record(dir, "threads" + std::to_string(threads),
                           {kMono, HMREC_MONO_TRUTH, "threads", std::to_string(threads)});
    requireRecorded(rec);
    for (const std::string& l : lines(rec.result.out)) {
      std::vector<std::string> f = fields(l);
      if (f.size() == 4 && f[0] == "threads" && f[2] == "vm") {
        CHECK(number(f[1]) == static_cast<uint64_t>(threads));
        return static_cast<int64_t>(number(f[3]));
      }
    }
    FAIL("no vm line in: " << rec.result.out);
    return int64_t{0};
  };
  int64_t few = vmAfter(20), many = vmAfter(400);
  INFO("VmSize after 20 threads " << few << " kB, after 400 " << many << " kB");
  CHECK(many - few < 16 * 1024);  // kept per thread: 2 MiB shadow stack, 1 MiB birth queue
}

TEST_CASE("mono: class layouts name exactly the reference fields", "[recorder][mono]") {
  TempDir dir;
  Recording rec = record(dir, "mono_layouts", {kMono, HMREC_MONO_TRUTH, "layouts"});
  requireRecorded(rec);
  // (mono-boehm may add "Waiting on threads to park..." at exit, with or without the recorder)
  REQUIRE(!lines(rec.result.out).empty());
  CHECK(lines(rec.result.out)[0] == "layouts 11");
  ManagedLog log = readManagedLog(rec.logPath);
  using L = TypeLayout;
  auto layoutOf = [&](const std::string& name) {
    INFO("class " << name);
    auto it = log.typeDefs.find(name);
    REQUIRE(it != log.typeDefs.end());
    return it->second;
  };
  auto expect = [&](const std::string& name, L layout, std::vector<uint32_t> refs,
                    uint32_t elementSize = 0) {
    TypeDef t = layoutOf(name);
    INFO("class " << name);
    CHECK(t.layout == layout);
    CHECK(t.refOffsets == refs);
    CHECK(t.elementSize == elementSize);
    CHECK(t.dataOffset == (layout == L::kArray ? 32u : 0u));
  };
  // Explicit offsets count from the 16-byte header; a struct's fields sit at the struct's
  // offset in the object; statics are not in the object.
  expect("Truth.ExplicitRefs", L::kFields, {16, 32});
  expect("Truth.WithStruct", L::kFields, {32, 40});
  expect("Truth.PlainData", L::kPointerFree, {});
  expect("Truth.Box<System.String>", L::kFields, {16});
  expect("Truth.Box<System.Int32>", L::kPointerFree, {});
  expect("Truth.RefPair[]", L::kArray, {8}, 16);
  expect("System.Object[]", L::kArray, {0}, 8);
  expect("System.Int32[]", L::kPointerFree, {});
  expect("Truth.Colour[]", L::kPointerFree, {});
  expect("Truth.ExplicitRefs[,]", L::kArray, {0}, 8);
  expect("System.String", L::kPointerFree, {});
  // A base class's reference fields are the derived object's too: two, apart, in the object.
  TypeDef derived = layoutOf("Truth.DerivedRefs");
  CHECK(derived.layout == L::kFields);
  REQUIRE(derived.refOffsets.size() == 2);
  CHECK(derived.refOffsets[0] >= 16);
  CHECK(derived.refOffsets[1] >= derived.refOffsets[0] + 8);
  CHECK(derived.refOffsets[1] + 8 <= derived.instanceSize);
  // Every class the runtime itself allocated has a layout that fits its objects.
  for (const auto& [name, t] : log.typeDefs) {
    INFO("class " << name);
    CHECK(t.layout != L::kUnknown);
    CHECK(std::is_sorted(t.refOffsets.begin(), t.refOffsets.end()));
    for (uint32_t off : t.refOffsets) {
      CHECK(off % 8 == 0);
      if (t.layout == L::kFields) CHECK(off + 8 <= t.instanceSize);
      if (t.layout == L::kArray) CHECK(off + 8 <= t.elementSize);
    }
  }
}

// Managed stacks walked instead of shadowed (HEAPMAN_MONO_WALK=check, hooks/mono/walk.cpp): at
// every allocation the fast walk (frame pointers and JIT'ed prologues' rules) and the runtime's
// own (mono_stack_walk_no_il) both run; a stack the fast walk claims to have proven must be the
// runtime's, frame for frame, on the sample game and on the C# compiler, and each program's
// output stays the same.
namespace {
struct WalkCounts {
  uint64_t fast = 0, fallback = 0, same = 0, differ = 0;
  bool found = false;
};
WalkCounts walkCounts(const std::string& err) {
  WalkCounts c;
  size_t at = err.find("Mono stack walk: ");
  if (at == std::string::npos) return c;
  unsigned long long f, b, s, d;
  const char* p = err.c_str() + at;
  const char* checked = std::strstr(p, "checked: ");
  if (std::sscanf(p, "Mono stack walk: %llu fast, %llu by the runtime's walk", &f, &b) != 2 ||
      !checked || std::sscanf(checked, "checked: %llu same, %llu differ", &s, &d) != 2)
    return c;
  return {f, b, s, d, true};
}
}  // namespace

TEST_CASE("mono: a stack the fast walk proves is the runtime's own walk", "[recorder][mono]") {
  TempDir dir;
  RunResult plain = run(dir, "game_plain", {"/usr/bin/env", kMono, HMREC_MONO_GAME, "3", "200"});
  REQUIRE(plain.status == 0);
  Recording rec;
  {
    ScopedEnv walk("HEAPMAN_MONO_WALK", "check");
    rec = record(dir, "game", {kMono, HMREC_MONO_GAME, "3", "200"});
  }
  // Not requireRecorded: the walk counts are one more heaprec line.
  REQUIRE(rec.result.status == 0);
  REQUIRE(rec.hasWroteLine);
  CHECK(rec.result.out == plain.out);
  WalkCounts c = walkCounts(rec.result.err);
  INFO(rec.result.err);
  REQUIRE(c.found);
  CHECK(c.differ == 0);
  CHECK(c.same > 0);
  ManagedLog log = readManagedLog(rec.logPath);
  CHECK(c.same + c.fallback + c.differ == log.allocs.size());
#ifdef HMREC_MCS_EXE
  const std::string sources = HMREC_MONO_SOURCES;
  Recording mcs;
  {
    ScopedEnv walk("HEAPMAN_MONO_WALK", "check");
    mcs = record(dir, "mcs", {kMono, HMREC_MCS_EXE, "-out:" + dir.file("game.exe"),
                              sources + "/Game.cs", sources + "/HeapMan.cs"});
  }
  REQUIRE(mcs.result.status == 0);
  REQUIRE(mcs.hasWroteLine);
  WalkCounts m = walkCounts(mcs.result.err);
  INFO(mcs.result.err);
  REQUIRE(m.found);
  CHECK(m.differ == 0);
  CHECK(m.same > 0);
#endif
}
