// bdwgc layer: rec_gc_truth (tests/integration/recorder/progs) recorded with heaprec. The
// collected set of every collection must equal the program's own ground truth from long weak
// links, exactly, single- and multi-threaded; allocation and free counts per heap kind must
// equal the program's; the program's own collection callback must still run once per collection;
// each collection has its root set.
#include <cstdlib>
#include <map>
#include <set>

#include "recorder_support.h"

namespace {

using namespace hmrec;

struct Truth {
  std::map<uint32_t, std::set<uint64_t>> collected;  // GC number -> addresses
  std::map<std::string, uint64_t> allocs;            // heap kind name -> objects
  uint64_t frees = 0, starts = 0, firstGc = 0, tracked = 0;
};

Truth parseTruth(const std::string& out) {
  Truth t;
  for (const std::string& l : lines(out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 3 && f[0] == "collected")
      t.collected[static_cast<uint32_t>(number(f[1]))].insert(number(f[2]));
    else if (f.size() == 3 && f[0] == "allocs")
      t.allocs[f[1]] = number(f[2]);
    else if (f.size() == 2 && f[0] == "frees")
      t.frees = number(f[1]);
    else if (f.size() == 2 && f[0] == "starts")
      t.starts = number(f[1]);
    else if (f.size() == 2 && f[0] == "first_gc")
      t.firstGc = number(f[1]);
    else if (f.size() == 2 && f[0] == "tracked")
      t.tracked = number(f[1]);
  }
  return t;
}

struct Seen {
  std::map<uint32_t, std::set<uint64_t>> collected;
  std::map<std::string, uint64_t> allocs;
  // Frees of objects the log allocated; frees of others are libgc freeing its own tables
  // (allocated without the PLT, so never recorded).
  uint64_t frees = 0, unknownFrees = 0;
  std::vector<uint32_t> gcs;  // GcEnd numbers
  uint64_t gcBegins = 0, gcEnds = 0, rootSets = 0;
  uint64_t collectedNeverBorn = 0;  // a collected address with no live allocation
  uint64_t rootSetsWithoutStatic = 0, rootSetsWithoutStack = 0;
  uint32_t lastGc = 0;
  bool gcOrder = true;  // GcBegin/GcEnd alternate with increasing numbers
  std::vector<ModuleLoad> modules;
  std::vector<RootEntry> lastRoots;
  std::map<uint32_t, ThreadStart> threads;
  uint64_t stacksNamed = 0, stacksOutsideTheirThread = 0;  // RootSet stack entries
};

// The module (file name) a static-data root lies in, from the log's ModuleLoad records.
std::string moduleOf(const std::vector<ModuleLoad>& modules, uint64_t address) {
  for (const ModuleLoad& m : modules)
    for (const ModuleSegment& seg : m.segments)
      if (address >= m.base + seg.vaddr && address < m.base + seg.vaddr + seg.memSize)
        return m.path.substr(m.path.rfind('/') + 1);
  return "?";
}

Seen readGcLog(const std::string& path) {
  Seen s;
  std::set<uint64_t> live;  // GC-heap objects the log holds alive
  std::map<uint32_t, std::vector<uint64_t>> pending;
  bool inGc = false;
  LogReader reader = LogReader::open(path);
  reader.forEachRecord([&](const auto& r) {
    using T = std::decay_t<decltype(r)>;
    if constexpr (std::is_same_v<T, Alloc>) {
      if (r.heap == HeapKind::kNative) return;
      ++s.allocs[heapKindName(r.heap)];
      live.insert(r.address);
    } else if constexpr (std::is_same_v<T, Free>) {
      if (r.heap == HeapKind::kNative) return;
      if (live.erase(r.address))
        ++s.frees;
      else
        ++s.unknownFrees;
    } else if constexpr (std::is_same_v<T, Collected>) {
      for (uint64_t a : r.addresses) pending[r.gcNumber].push_back(a);
    } else if constexpr (std::is_same_v<T, GcBegin>) {
      ++s.gcBegins;
      if (inGc || r.gcNumber <= s.lastGc) s.gcOrder = false;
      inGc = true;
      s.lastGc = r.gcNumber;
    } else if constexpr (std::is_same_v<T, GcEnd>) {
      ++s.gcEnds;
      s.gcs.push_back(r.gcNumber);
      if (!inGc || r.gcNumber != s.lastGc) s.gcOrder = false;
      inGc = false;
      for (uint64_t a : pending[r.gcNumber]) {
        if (!live.erase(a)) ++s.collectedNeverBorn;
        s.collected[r.gcNumber].insert(a);
      }
      pending.erase(r.gcNumber);
    } else if constexpr (std::is_same_v<T, ModuleLoad>) {
      s.modules.push_back(r);
    } else if constexpr (std::is_same_v<T, ThreadStart>) {
      s.threads[r.index] = r;
    } else if constexpr (std::is_same_v<T, RootSet>) {
      ++s.rootSets;
      s.lastRoots = r.roots;
      bool stat = false, stack = false;
      for (const RootEntry& e : r.roots) {
        stat |= e.source == RootSource::kStaticData;
        stack |= e.source == RootSource::kThreadStack;
        // A stack named by its thread lies within that thread's stack (ThreadStart).
        if (e.source != RootSource::kThreadStack || e.thread == kRecorderThread) continue;
        ++s.stacksNamed;
        auto t = s.threads.find(e.thread);
        if (t == s.threads.end() || e.address < t->second.stackLow ||
            e.address + e.size > t->second.stackHigh)
          ++s.stacksOutsideTheirThread;
      }
      s.rootSetsWithoutStatic += !stat;
      s.rootSetsWithoutStack += !stack;
    }
  });
  return s;
}

// `ringMb`: the recording threads' ring size (HEAPMAN_RING_MB), when not the default. `gcMarks`:
// how libgc's mark bits are read (HEAPMAN_GC_MARKS), with the recorder's counts (HEAPMAN_STATS)
// then; `options`: heaprec's. Returns heaprec's stderr.
std::string checkAgainstTruth(unsigned threads, unsigned perThread, const char* ringMb = nullptr,
                              const char* gcMarks = nullptr,
                              const std::vector<std::string>& options = {}) {
  TempDir dir;
  const std::vector<std::string> prog = {HMREC_PROG_GC_TRUTH, std::to_string(threads),
                                         std::to_string(perThread)};
  Recording rec;
  {
    ScopedEnv ring("HEAPMAN_RING_MB", ringMb), marks("HEAPMAN_GC_MARKS", gcMarks);
    rec = gcMarks ? recordWithStats(dir, "gc_truth", prog, options)
                  : record(dir, "gc_truth", prog, options);
  }
  if (!gcMarks) requireRecorded(rec);
  Truth truth = parseTruth(rec.result.out);
  Seen seen = readGcLog(rec.logPath);
  REQUIRE(truth.tracked > 0);

  // Every collection the program saw, the log has, in order and paired.
  CHECK(seen.gcOrder);
  CHECK(seen.gcBegins == seen.gcEnds);
  uint64_t seenByProgram = 0;
  for (uint32_t gc : seen.gcs) seenByProgram += gc >= truth.firstGc;
  CHECK(seenByProgram == truth.starts);
  CHECK(seen.rootSets == seen.gcEnds);
  CHECK(seen.rootSetsWithoutStatic == 0);
  CHECK(seen.rootSetsWithoutStack == 0);
  CHECK(seen.stacksNamed >= seen.rootSets);  // at least the collecting thread's
  CHECK(seen.stacksOutsideTheirThread == 0);
  // The program's static data is a root; the recorder's own libraries are not (their data holds
  // no heap pointer, and the root size paces the collector: hiding them keeps the recorded
  // program collecting when the unrecorded one would).
  std::set<std::string> rootModules;
  for (const RootEntry& e : seen.lastRoots)
    if (e.source == RootSource::kStaticData) rootModules.insert(moduleOf(seen.modules, e.address));
  INFO("static roots in: " << [&] {
    std::string all;
    for (const std::string& m : rootModules) all += m + " ";
    return all;
  }());
  CHECK(rootModules.count("rec_gc_truth") == 1);
  CHECK(rootModules.count("libgc.so.1") == 1);
  for (const char* own : {"libheapman_preload.so", "liblz4.so.1", "libcapnp-0.9.2.so",
                          "libkj-0.9.2.so", "libunwind.so.8", "libxxhash.so.0"})
    CHECK(rootModules.count(own) == 0);

  for (auto& [heap, n] : truth.allocs) {
    INFO("heap " << heap);
    CHECK(seen.allocs[heap] == n);
  }
  CHECK(seen.frees == truth.frees);
  CHECK(seen.collectedNeverBorn == 0);

  // The collected sets, GC by GC.
  uint64_t truthTotal = 0, seenTotal = 0;
  for (auto& [gc, set] : truth.collected) truthTotal += set.size();
  for (auto& [gc, set] : seen.collected) seenTotal += set.size();
  INFO("collected objects: truth " << truthTotal << ", log " << seenTotal << ", tracked "
                                   << truth.tracked);
  std::set<uint32_t> gcs;
  for (auto& [gc, set] : truth.collected) gcs.insert(gc);
  for (auto& [gc, set] : seen.collected) gcs.insert(gc);
  uint64_t wrongGcs = 0;
  std::string firstWrong;
  for (uint32_t gc : gcs) {
    const std::set<uint64_t>& t = truth.collected[gc];
    const std::set<uint64_t>& s = seen.collected[gc];
    if (t == s) continue;
    if (wrongGcs++ == 0) {
      uint64_t missing = 0, extra = 0;
      for (uint64_t a : t) missing += !s.count(a);
      for (uint64_t a : s) extra += !t.count(a);
      firstWrong = "GC " + std::to_string(gc) + ": truth " + std::to_string(t.size()) + ", log " +
                   std::to_string(s.size()) + " (missing " + std::to_string(missing) +
                   ", extra " + std::to_string(extra) + ")";
    }
  }
  INFO(firstWrong);
  CHECK(wrongGcs == 0);
  CHECK(seenTotal == truthTotal);
  // Nearly everything dies by the end; the rest is what the last collections could not free
  // (conservative roots), which the truth knows too.
  CHECK(truthTotal * 10 >= truth.tracked * 9);

  LogSummary sum = summarizeLog(rec.logPath);
  CHECK(sum.gcs == seen.gcEnds);
  return rec.result.err;
}

// The numbers of the recorder's line starting with `prefix` (HEAPMAN_STATS), in order.
std::vector<uint64_t> statsLine(const std::string& err, const std::string& prefix) {
  std::vector<uint64_t> out;
  for (const std::string& l : lines(err)) {
    size_t at = l.find(prefix);
    if (at == std::string::npos) continue;
    for (size_t i = at + prefix.size(); i < l.size();) {
      if (l[i] < '0' || l[i] > '9') {
        ++i;
        continue;
      }
      size_t end = l.find_first_not_of("0123456789", i);
      out.push_back(number(l.substr(i, end - i)));
      i = end == std::string::npos ? l.size() : end;
    }
  }
  return out;
}

// libgc's mark bits copied a block at a time from its block headers (found in GC_arrays, checked
// against GC_is_marked): each snapshot, and with RAM dumps each dump's object list, must equal
// libgc's own enumeration of the same collection, and the collected sets the ground truth.
void checkBlockMarks(const std::vector<std::string>& options) {
  std::string err = checkAgainstTruth(1, 200000, nullptr, "compare", options);
  INFO(err);
  std::vector<uint64_t> ways = statsLine(err, "libgc mark snapshots: ");
  std::vector<uint64_t> compared = statsLine(err, "compared with its enumeration: ");
  REQUIRE(ways.size() == 2);
  REQUIRE(compared.size() == 2);
  // Collections are enumerated until one lists objects, through which the table is found: the
  // program's first collection, before it allocates, lists none; the second does.
  CHECK(ways[1] >= 1);
  CHECK(ways[1] <= 2);
  CHECK(ways[0] >= 10);
  CHECK(compared[0] == ways[0]);
  CHECK(compared[1] == 0);
  CHECK(err.find("reading its mark bits one object at a time") == std::string::npos);
}

}  // namespace

TEST_CASE("bdwgc: mark bits read a block at a time equal the enumeration's", "[recorder][gc]") {
  checkBlockMarks({});
}

TEST_CASE("bdwgc: mark bits read a block at a time list a RAM dump's objects as the enumeration",
          "[recorder][gc]") {
  checkBlockMarks({"--ram-dumps", "every"});
}

TEST_CASE("bdwgc: HEAPMAN_GC_MARKS=objects reads the mark bits one object at a time",
          "[recorder][gc]") {
  std::string err = checkAgainstTruth(1, 200000, nullptr, "objects");
  std::vector<uint64_t> ways = statsLine(err, "libgc mark snapshots: ");
  REQUIRE(ways.size() == 2);
  CHECK(ways[0] == 0);
  CHECK(ways[1] >= 10);
}

TEST_CASE("bdwgc: collected sets equal weak-link ground truth, one thread", "[recorder][gc]") {
  checkAgainstTruth(1, 200000);
}

TEST_CASE("bdwgc: collected sets equal weak-link ground truth, 4 threads", "[recorder][gc]") {
  checkAgainstTruth(4, 100000);
}

// Rings of 1 MiB (16 K allocation records) fill up while four threads allocate: threads wait
// for the writer, also while it steps aside for a collection (a waiting thread calls it back).
// Nothing may be lost or reordered: the same exact counts and collected sets.
TEST_CASE("bdwgc: collected sets equal ground truth with rings that fill", "[recorder][gc]") {
  checkAgainstTruth(4, 100000, "1");
}

// RAM dumps at every collection: the bytes of each live object as the program wrote them, the
// static root that holds them, the collecting thread's stack; pages that did not change stored
// once.
TEST_CASE("bdwgc: RAM dumps hold the live objects' bytes, roots and stacks", "[recorder][gc]") {
  TempDir dir;
  const int kObjects = 200;
  Recording rec = record(dir, "gc_dump", {HMREC_PROG_GC_DUMP, std::to_string(kObjects)},
                         {"--ram-dumps", "every"});
  requireRecorded(rec);
  std::map<uint64_t, int> objects;  // address -> pattern
  uint64_t rootAddress = 0, rootSize = 0;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 3 && f[0] == "object") objects[number(f[1])] = static_cast<int>(number(f[2]));
    if (f.size() == 3 && f[0] == "root") {
      rootAddress = number(f[1]);
      rootSize = number(f[2]);
    }
  }
  REQUIRE(objects.size() == kObjects);

  uint32_t lastGc = lastGcNumber(rec.logPath);
  REQUIRE(lastGc > 0);
  Dump dump = readDump(rec.logPath, lastGc);
  // Every kept object is in the last dump with its bytes.
  uint64_t rightBytes = 0;
  for (const auto& [address, pattern] : objects) {
    std::optional<std::vector<uint8_t>> b = dump.read(address, 64);
    bool same = b.has_value();
    for (size_t j = 0; same && j < 64; ++j) same = (*b)[j] == static_cast<uint8_t>(pattern * 16 + j % 16);
    rightBytes += same;
  }
  bool rootFound = false, stackFound = false, withinPages = true;
  for (const RamSegment& s : dump.segments) {
    if (s.kind == SegmentKind::kStaticRoot && s.address <= rootAddress &&
        rootAddress + rootSize <= s.address + s.length)
      rootFound = true;
    stackFound |= s.kind == SegmentKind::kThreadStack && s.length > 0;
    if (s.kind == SegmentKind::kObject)
      withinPages &= s.length > 0 && s.address / 4096 == (s.address + s.length - 1) / 4096;
  }
  CHECK(rightBytes == kObjects);
  CHECK(rootFound);
  CHECK(stackFound);
  CHECK(withinPages);
  // Nothing in the heap changed between the two collections: every page of the last dump has
  // the bytes of one dumped before, and is stored as a reference to them.
  CHECK(!dump.objectIndex.empty());
  CHECK(dump.storedObjectSegments == 0);
  CHECK(summarizeLog(rec.logPath).ramSegments > 0);
}

#ifdef HMREC_GC_GAME
// The sample game's output (all but its timing-dependent collection count) is unchanged.
TEST_CASE("bdwgc: the sample game's output is unchanged", "[recorder][gc]") {
  TempDir dir;
  RunResult plain = run(dir, "plain", {HMREC_GC_GAME, "2", "150"});
  REQUIRE(plain.status == 0);
  Recording rec = record(dir, "recorded", {HMREC_GC_GAME, "2", "150"});
  requireRecorded(rec);
  std::vector<std::string> a = lines(plain.out), b = lines(rec.result.out);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(b[0] == a[0]);
}
#endif
