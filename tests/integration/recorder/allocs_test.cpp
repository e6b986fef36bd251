// Single thread: every glibc allocation entry point (and C++ new/delete) between the markers
// must appear in the log exactly as the program saw it (rec_allocs prints what it did).
#include <cinttypes>
#include <map>
#include <set>

#include "heapman/logformat/summary.h"
#include "recorder_support.h"

namespace {

using namespace hmrec;

struct ExpectedOp {
  char kind;  // 'a' alloc, 'f' free, 'r' realloc
  uint64_t a = 0, b = 0, size = 0, usable = 0, align = 0;
};

struct AllocsManifest {
  std::vector<ExpectedOp> ops;
  uint64_t allocs = 0, frees = 0, reallocs = 0, bytes = 0;
  std::string totalsLine;
};

AllocsManifest parseAllocs(const std::string& out) {
  AllocsManifest m;
  bool totals = false;
  for (const std::string& l : lines(out)) {
    std::vector<std::string> f = fields(l);
    INFO("rec_allocs line: " << l);
    REQUIRE(!f.empty());
    REQUIRE(!totals);  // totals is the last line
    if (f[0] == "alloc") {
      REQUIRE(f.size() == 5);
      m.ops.push_back({'a', number(f[1]), 0, number(f[2]), number(f[3]), number(f[4])});
    } else if (f[0] == "free") {
      REQUIRE(f.size() == 2);
      m.ops.push_back({'f', number(f[1])});
    } else if (f[0] == "realloc") {
      REQUIRE(f.size() == 5);
      m.ops.push_back({'r', number(f[1]), number(f[2]), number(f[3]), number(f[4])});
    } else {
      REQUIRE(f.size() == 5);
      REQUIRE(f[0] == "totals");
      auto value = [&](const std::string& field, const std::string& key) {
        REQUIRE(field.rfind(key + "=", 0) == 0);
        return number(field.substr(key.size() + 1));
      };
      m.allocs = value(f[1], "allocs");
      m.frees = value(f[2], "frees");
      m.reallocs = value(f[3], "reallocs");
      m.bytes = value(f[4], "bytes");
      m.totalsLine = l;
      totals = true;
    }
  }
  REQUIRE(totals);
  return m;
}

}  // namespace

TEST_CASE("single thread: every allocation entry point exactly as the program made it",
          "[recorder][allocs]") {
  TempDir dir;
  const uint64_t n = 1000;
  Recording rec = record(dir, "allocs", {HMREC_PROG_ALLOCS, std::to_string(n)});
  requireRecorded(rec);
  CHECK(rec.programErr.empty());
  AllocsManifest m = parseAllocs(rec.result.out);
  // The program's own counts: N mallocs + malloc(0) + calloc + realloc(NULL) + 5 memalign family
  // + new + new[] + 2 large; as many frees (one by realloc(p, 0)); grow and shrink reallocs.
  REQUIRE(m.allocs == n + 12);
  REQUIRE(m.frees == n + 12);
  REQUIRE(m.reallocs == 2);
  REQUIRE(m.bytes == n * (n + 1) / 2 + 91 + 100 + 5000 + 50 + 100 + 8192 + 50 + 1000 + 3000 + 40 +
                         100 + (1u << 20) + (3u << 20));

  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  std::vector<Window> ws = windows(log);
  REQUIRE(ws.size() == 1);
  const Window w = ws[0];
  CHECK(w.thread == 0);  // the main thread is recorder thread 0

  // The heap records of the main thread between the markers.
  std::vector<size_t> heap;
  for (size_t i = w.begin + 1; i < w.end; ++i) {
    const Record& r = log.records[i];
    if (!std::holds_alternative<Alloc>(r) && !std::holds_alternative<Free>(r) &&
        !std::holds_alternative<Realloc>(r))
      continue;
    if (eventOf(r)->thread == w.thread) heap.push_back(i);
  }

  // Totals first (short messages), then record by record.
  uint64_t allocs = 0, frees = 0, reallocs = 0, bytes = 0;
  for (size_t i : heap) {
    const Record& r = log.records[i];
    if (const auto* a = std::get_if<Alloc>(&r)) ++allocs, bytes += a->size;
    if (std::holds_alternative<Free>(r)) ++frees;
    if (const auto* x = std::get_if<Realloc>(&r)) ++reallocs, bytes += x->size;
  }
  CHECK(allocs == m.allocs);
  CHECK(frees == m.frees);
  CHECK(reallocs == m.reallocs);
  CHECK(bytes == m.bytes);

  REQUIRE(heap.size() == m.ops.size());
  std::set<uint64_t> live;  // from the log alone: every free names a block allocated before
  for (size_t k = 0; k < heap.size(); ++k) {
    const Record& r = log.records[heap[k]];
    const ExpectedOp& e = m.ops[k];
    INFO("operation " << k << ": log has " << describe(r) << "; program made " << e.kind << std::hex
                      << " 0x" << e.a << " 0x" << e.b << std::dec << " size " << e.size
                      << " usable " << e.usable << " align " << e.align);
    if (e.kind == 'a') {
      const auto* a = std::get_if<Alloc>(&r);
      REQUIRE(a);
      CHECK(a->heap == HeapKind::kNative);
      CHECK(a->address == e.a);
      CHECK(a->size == e.size);
      CHECK(a->actualSize == e.usable);
      CHECK(a->actualSize >= a->size);
      if (e.align) CHECK(a->address % e.align == 0);
      CHECK(live.insert(a->address).second);
    } else if (e.kind == 'f') {
      const auto* f = std::get_if<Free>(&r);
      REQUIRE(f);
      CHECK(f->heap == HeapKind::kNative);
      CHECK(f->address == e.a);
      CHECK(live.erase(f->address) == 1);
    } else {
      const auto* x = std::get_if<Realloc>(&r);
      REQUIRE(x);
      CHECK(x->heap == HeapKind::kNative);
      CHECK(x->oldAddress == e.a);
      CHECK(x->newAddress == e.b);
      CHECK(x->size == e.size);
      CHECK(x->actualSize == e.usable);
      CHECK(x->actualSize >= x->size);
      CHECK(live.erase(x->oldAddress) == 1);
      CHECK(live.insert(x->newAddress).second);
    }
  }
  CHECK(live.empty());  // the program freed everything it allocated between the markers

  // The whole log passes the full check, and heaprec counted its events.
  LogSummary s = summarizeLog(rec.logPath);
  CHECK(s.events == rec.wroteEvents);
}
