// Threads: 8 workers x 1,000,000 malloc/free pairs, each bracketed on its own thread. The log is
// streamed (16M+ events do not fit in memory as Record values) and checked for exact per-thread
// counts and bytes, pairing of every free with the allocation just before it, thread indices,
// ThreadStart records and strictly increasing sequence numbers; then summarize() and
// `heapman verify` check the whole file.
#include <map>
#include <set>

#include "recorder_support.h"

namespace {

using namespace hmrec;

struct WorkerLine {
  uint32_t tid = 0;
  uint64_t pairs = 0, bytes = 0;
};

struct ThreadTally {
  int windows = 0;
  bool inside = false;
  uint64_t allocs = 0, frees = 0, reallocs = 0, bytes = 0;
  uint64_t unpaired = 0;  // a free that does not free the allocation just before it
  uint64_t wrongHeap = 0;
  uint64_t otherEvents = 0;  // heap events of this thread outside its window
  bool pending = false;
  uint64_t pendingAddress = 0;
};

}  // namespace

namespace {
// THREADS workers x PAIRS malloc/free pairs: every pair in the log on its own thread, exactly.
void checkThreadPairs(const unsigned kThreads, const uint64_t kPairs) {
  TempDir dir;
  Recording rec = record(dir, "threads",
                         {HMREC_PROG_THREADS, std::to_string(kThreads), std::to_string(kPairs)});
  requireRecorded(rec);
  if (rec.result.seconds > 20) WARN("the recorded run took " << rec.result.seconds << " s");

  uint32_t pid = 0;
  std::vector<WorkerLine> workers;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    INFO("rec_threads line: " << l);
    if (f.size() == 2 && f[0] == "pid") {
      pid = static_cast<uint32_t>(number(f[1]));
      continue;
    }
    REQUIRE(f.size() == 8);
    REQUIRE(f[0] == "worker");
    workers.push_back({static_cast<uint32_t>(number(f[3])), number(f[5]), number(f[7])});
    REQUIRE(workers.back().pairs == kPairs);
  }
  REQUIRE(pid != 0);
  REQUIRE(workers.size() == kThreads);

  std::optional<LogReader> reader;
  try {
    reader.emplace(LogReader::open(rec.logPath));
  } catch (const FormatError& e) {
    FAIL("cannot open the log: " << e.what());
  }
  CHECK(reader->end().complete);
  CHECK(reader->header().pid == pid);

  std::unordered_map<uint32_t, std::string> strings;
  std::map<uint32_t, ThreadTally> tally;  // by recorder thread index
  std::map<uint32_t, uint32_t> osTidOf;   // ThreadStart: index -> OS tid
  uint64_t threadStarts = 0, duplicateStarts = 0;
  uint64_t events = 0, seqNotIncreasing = 0, allocsTotal = 0;
  struct Early {
    uint64_t count = 0;
    std::string first;
  };
  std::map<uint32_t, Early> early;  // events of a thread index before its ThreadStart
  HeapTracker heap;                 // the whole log, all threads
  uint64_t lastSeq = 0;
  bool anyEvent = false;

  auto onEvent = [&](const EventCommon& ev) {
    ++events;
    if (anyEvent && ev.seq <= lastSeq) ++seqNotIncreasing;
    anyEvent = true;
    lastSeq = ev.seq;
  };
  try {
    reader->forEachRecord([&](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, LogString>) strings[x.id] = x.text;
      if constexpr (requires { x.ev; }) {
        onEvent(x.ev);
        // Every event's thread must have been announced by a ThreadStart (its own ThreadStart
        // is the first event that may carry the index).
        if constexpr (!std::is_same_v<T, ThreadStart>)
          if (!osTidOf.count(x.ev.thread)) {
            if (++early[x.ev.thread].count <= 3)
              early[x.ev.thread].first += std::string(" ") + recordKindName(Record(x).index()) +
                                          "(seq " + std::to_string(x.ev.seq) + ")";
          }
      }
      if constexpr (std::is_same_v<T, ThreadStart>) {
        ++threadStarts;
        if (!osTidOf.emplace(x.index, x.osTid).second) ++duplicateStarts;
      }
      if constexpr (std::is_same_v<T, CustomEvent>) {
        auto it = strings.find(x.nameId);
        if (it != strings.end() && (it->second == "begin" || it->second == "end")) {
          ThreadTally& t = tally[x.ev.thread];
          bool begin = it->second == "begin";
          if (begin) ++t.windows;
          t.inside = begin;
        }
      }
      if constexpr (std::is_same_v<T, Alloc>) {
        ++allocsTotal;
        if (x.heap == HeapKind::kNative) heap.alloc(x.ev, x.address);
        ThreadTally& t = tally[x.ev.thread];
        if (!t.inside) {
          ++t.otherEvents;
          return;
        }
        ++t.allocs;
        t.bytes += x.size;
        if (x.heap != HeapKind::kNative || x.actualSize < x.size) ++t.wrongHeap;
        if (t.pending) ++t.unpaired;
        t.pending = true;
        t.pendingAddress = x.address;
      }
      if constexpr (std::is_same_v<T, Free>) {
        if (x.heap == HeapKind::kNative) heap.free(x.ev, x.address);
        ThreadTally& t = tally[x.ev.thread];
        if (!t.inside) {
          ++t.otherEvents;
          return;
        }
        ++t.frees;
        if (x.heap != HeapKind::kNative) ++t.wrongHeap;
        if (!t.pending || t.pendingAddress != x.address) ++t.unpaired;
        t.pending = false;
      }
      if constexpr (std::is_same_v<T, Realloc>) {
        if (x.heap == HeapKind::kNative) {
          heap.free(x.ev, x.oldAddress);
          heap.alloc(x.ev, x.newAddress);
        }
        ThreadTally& t = tally[x.ev.thread];
        if (t.inside) ++t.reallocs;
      }
    });
  } catch (const FormatError& e) {
    FAIL("cannot decode the log: [" << errorCodeName(e.code()) << "] " << e.what());
  }

  CHECK(seqNotIncreasing == 0);
  {
    INFO("allocations of an address still live in the log:" << heap.examples);
    CHECK(heap.allocOfLive == 0);
  }
  // A thread's ThreadStart comes before its other events. (Events on indices no ThreadStart
  // announces at all are the subject of the next test case.)
  for (const auto& [index, e] : early) {
    if (!osTidOf.count(index)) continue;
    INFO("thread " << index << " has " << e.count << " events before its ThreadStart:" << e.first);
    CHECK(e.count == 0);
  }
  // One ThreadStart per thread: main + workers, distinct indices, main is 0 with the pid as tid.
  CHECK(threadStarts == kThreads + 1);
  CHECK(duplicateStarts == 0);
  REQUIRE(osTidOf.count(0));
  CHECK(osTidOf[0] == pid);

  uint64_t windowsSeen = 0;
  for (const auto& [index, t] : tally) windowsSeen += t.windows;
  CHECK(windowsSeen == kThreads);

  std::set<uint32_t> indices;
  for (const WorkerLine& w : workers) {
    INFO("worker with tid " << w.tid);
    uint32_t index = 0;
    bool found = false;
    for (const auto& [i, tid] : osTidOf)
      if (tid == w.tid) index = i, found = true;
    REQUIRE(found);  // a ThreadStart names the worker's OS thread
    CHECK(index != 0);
    CHECK(indices.insert(index).second);
    INFO("recorder thread index " << index);
    REQUIRE(tally.count(index));
    const ThreadTally& t = tally[index];
    CHECK(t.windows == 1);
    CHECK(!t.inside);
    CHECK(t.allocs == w.pairs);
    CHECK(t.frees == w.pairs);
    CHECK(t.bytes == w.bytes);
    CHECK(t.reallocs == 0);
    CHECK(t.unpaired == 0);
    CHECK(t.wrongHeap == 0);
  }
  CHECK(allocsTotal >= kThreads * kPairs);

  LogSummary s = summarizeLog(rec.logPath);
  CHECK(s.events == events);
  CHECK(s.records[Record(Alloc{}).index()] == allocsTotal);
  CHECK(s.events == rec.wroteEvents);

  RunResult verify = run(dir, "verify", {HMREC_HEAPMAN, "verify", rec.logPath});
  INFO("heapman verify: " << verify.out << verify.err);
  CHECK(verify.status == 0);
  CHECK(verify.out.find(": OK,") != std::string::npos);
  CHECK(verify.out.find("complete") != std::string::npos);
}
}  // namespace

TEST_CASE("threads: 8 x 1000000 malloc/free pairs exact per thread", "[recorder][threads]") {
  checkThreadPairs(8, 1000000);
}

// More threads than cores x 16: they wait for the writer when it falls 30 ms behind (the SIGKILL
// bound), and nothing may be lost or reordered.
TEST_CASE("threads: 32 x 200000 malloc/free pairs exact per thread", "[recorder][threads]") {
  checkThreadPairs(32, 200000);
}

TEST_CASE("threads: every program event carries the index of a thread announced by ThreadStart",
          "[recorder][threads]") {
  TempDir dir;
  Recording rec = record(dir, "threads-small", {HMREC_PROG_THREADS, "4", "1000"});
  requireRecorded(rec);
  Log log = readLog(rec.logPath);
  std::set<uint32_t> announced;
  for (const Record& r : log.records)
    if (const auto* t = std::get_if<ThreadStart>(&r)) announced.insert(t->index);
  CHECK(announced.size() == 5);
  std::map<uint32_t, std::map<std::string, uint64_t>> strays;  // index -> record kind -> count
  for (const Record& r : log.records) {
    auto ev = eventOf(r);
    if (!ev || announced.count(ev->thread)) continue;
    // Module changes the writer thread finds itself carry its index (docs/DESIGN.md 2.1).
    bool moduleEvent =
        std::holds_alternative<ModuleLoad>(r) || std::holds_alternative<ModuleUnload>(r);
    if (moduleEvent && ev->thread == heapman::log::kRecorderThread) continue;
    ++strays[ev->thread][recordKindName(r.index())];
  }
  for (const auto& [index, kinds] : strays) {
    std::string what;
    for (const auto& [kind, count] : kinds) what += " " + std::to_string(count) + " " + kind;
    INFO("thread index " << index << " (no ThreadStart) carries" << what);
    CHECK(kinds.empty());
  }
}

TEST_CASE("threads: blocks allocated on one thread and freed on another", "[recorder][threads]") {
  const unsigned kPairs = 4;
  const uint64_t kBlocks = 200000;
  TempDir dir;
  Recording rec =
      record(dir, "handoff", {HMREC_PROG_HANDOFF, std::to_string(kPairs), std::to_string(kBlocks)});
  requireRecorded(rec);
  struct PairLine {
    uint32_t producerTid = 0, consumerTid = 0;
    uint64_t blocks = 0, bytes = 0, reallocs = 0;
  };
  std::vector<PairLine> pairs;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    INFO("rec_handoff line: " << l);
    REQUIRE(f.size() == 12);
    REQUIRE(f[0] == "pair");
    pairs.push_back({static_cast<uint32_t>(number(f[3])), static_cast<uint32_t>(number(f[5])),
                     number(f[7]), number(f[9]), number(f[11])});
    REQUIRE(pairs.back().reallocs == kBlocks / 4);
  }
  REQUIRE(pairs.size() == kPairs);

  struct Tally {
    bool inside = false;
    int windows = 0;
    uint64_t allocs = 0, frees = 0, reallocs = 0, bytes = 0;
    uint64_t unknownFrees = 0;  // frees and reallocs (in the window) of blocks never allocated
    std::map<uint32_t, uint64_t> freedFrom;    // allocating thread -> frees (in the window)
    std::map<uint32_t, uint64_t> reallocFrom;  // allocating thread -> reallocs (in the window)
  };
  std::map<uint32_t, Tally> tally;
  std::map<uint32_t, uint32_t> indexOfTid;
  std::unordered_map<uint32_t, std::string> strings;
  HeapTracker heap;
  uint64_t lastSeq = 0, seqNotIncreasing = 0;
  bool any = false;
  std::optional<LogReader> reader;
  try {
    reader.emplace(LogReader::open(rec.logPath));
    reader->forEachRecord([&](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (requires { x.ev; }) {
        if (any && x.ev.seq <= lastSeq) ++seqNotIncreasing;
        any = true;
        lastSeq = x.ev.seq;
      }
      if constexpr (std::is_same_v<T, LogString>) strings[x.id] = x.text;
      if constexpr (std::is_same_v<T, ThreadStart>) indexOfTid[x.osTid] = x.index;
      if constexpr (std::is_same_v<T, CustomEvent>) {
        auto it = strings.find(x.nameId);
        if (it != strings.end() && (it->second == "begin" || it->second == "end")) {
          Tally& t = tally[x.ev.thread];
          t.inside = it->second == "begin";
          t.windows += t.inside;
        }
      }
      if constexpr (std::is_same_v<T, Alloc>) {
        heap.alloc(x.ev, x.address);
        Tally& t = tally[x.ev.thread];
        if (t.inside) ++t.allocs, t.bytes += x.size;
      }
      if constexpr (std::is_same_v<T, Free>) {
        std::optional<uint32_t> from = heap.free(x.ev, x.address);
        Tally& t = tally[x.ev.thread];
        if (t.inside) {
          ++t.frees;
          if (from)
            ++t.freedFrom[*from];
          else
            ++t.unknownFrees;
        }
      }
      if constexpr (std::is_same_v<T, Realloc>) {
        std::optional<uint32_t> from = heap.free(x.ev, x.oldAddress);
        heap.alloc(x.ev, x.newAddress);
        Tally& t = tally[x.ev.thread];
        if (t.inside) {
          ++t.reallocs;
          if (from)
            ++t.reallocFrom[*from];
          else
            ++t.unknownFrees;
        }
      }
    });
  } catch (const FormatError& e) {
    FAIL("cannot read the log: [" << errorCodeName(e.code()) << "] " << e.what());
  }
  CHECK(reader->end().complete);
  CHECK(seqNotIncreasing == 0);
  {
    INFO("allocations of an address still live in the log:" << heap.examples);
    CHECK(heap.allocOfLive == 0);
  }
  if (heap.crossThreadReuse == 0)
    WARN("glibc never reused a block across threads: the ordering check had nothing to see");

  for (size_t k = 0; k < pairs.size(); ++k) {
    const PairLine& p = pairs[k];
    INFO("pair " << k << ": producer tid " << p.producerTid << ", consumer tid " << p.consumerTid);
    REQUIRE(indexOfTid.count(p.producerTid));
    REQUIRE(indexOfTid.count(p.consumerTid));
    uint32_t producer = indexOfTid[p.producerTid], consumer = indexOfTid[p.consumerTid];
    const Tally& pt = tally[producer];
    const Tally& ct = tally[consumer];
    CHECK(pt.windows == 1);
    CHECK(ct.windows == 1);
    CHECK(pt.allocs == p.blocks);
    CHECK(pt.bytes == p.bytes);
    CHECK(pt.frees == 0);
    CHECK(ct.allocs == 0);
    CHECK(pt.reallocs == 0);
    CHECK(ct.frees == p.blocks);
    CHECK(ct.reallocs == p.reallocs);
    CHECK(ct.unknownFrees == 0);
    // The consumer reallocated blocks of its producer, and freed those and its own reallocs.
    auto count = [](const std::map<uint32_t, uint64_t>& m, uint32_t thread) -> uint64_t {
      auto it = m.find(thread);
      return it == m.end() ? 0 : it->second;
    };
    CHECK(ct.reallocFrom.size() == 1);
    CHECK(count(ct.reallocFrom, producer) == p.reallocs);
    CHECK(count(ct.freedFrom, producer) == p.blocks - p.reallocs);
    CHECK(count(ct.freedFrom, consumer) == p.reallocs);
    CHECK(ct.freedFrom.size() == 2);
  }
  (void)summarizeLog(rec.logPath);
}
