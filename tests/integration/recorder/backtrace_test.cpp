// Backtraces: an allocation made through run -> chain_a -> chain_b -> chain_c -> malloc carries a
// stack whose frames (leaf first) are return addresses inside chain_c, chain_b, chain_a and run,
// in that order. rec_backtrace prints the functions' runtime addresses; each is 256-byte aligned
// and shorter than 256 bytes, so [F, F + 256) holds F's return addresses and no other function's.
#include <iomanip>
#include <set>
#include <sstream>

#include "recorder_support.h"

namespace {

using namespace hmrec;

struct BacktraceRun {
  std::map<std::string, uint64_t> fn;
  std::vector<uint64_t> chain;
  uint64_t direct = 0;
  Log log;
  std::vector<const Alloc*> chainAllocs;
  const Alloc* directAlloc = nullptr;
};

constexpr uint64_t kFnSpan = 256;

BacktraceRun recordBacktrace(const TempDir& dir, const std::vector<std::string>& options,
                             const char* program = HMREC_PROG_BACKTRACE) {
  BacktraceRun b;
  Recording rec = record(dir, "backtrace", {program}, options);
  requireRecorded(rec);
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    INFO("rec_backtrace line: " << l);
    if (f.size() == 3 && f[0] == "fn")
      b.fn[f[1]] = number(f[2]);
    else if (f.size() == 2 && f[0] == "chain")
      b.chain.push_back(number(f[1]));
    else if (f.size() == 2 && f[0] == "direct")
      b.direct = number(f[1]);
    else
      FAIL("unexpected line");
  }
  REQUIRE(b.fn.size() == 4);
  REQUIRE(b.chain.size() == 3);
  for (const auto& [name, start] : b.fn) {
    INFO(name << " starts at " << start);
    CHECK(start % kFnSpan == 0);
  }

  b.log = readLog(rec.logPath);
  std::vector<Window> ws = windows(b.log);
  REQUIRE(ws.size() == 1);
  for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i) {
    const auto* a = std::get_if<Alloc>(&b.log.records[i]);
    if (!a || a->ev.thread != ws[0].thread) continue;
    if (a->size == 12345)
      b.chainAllocs.push_back(a);
    else if (a->size == 54321)
      b.directAlloc = a;
    else
      FAIL("unexpected allocation " << describe(b.log.records[i]));
  }
  REQUIRE(b.chainAllocs.size() == 3);
  REQUIRE(b.directAlloc);
  for (size_t i = 0; i < 3; ++i) CHECK(b.chainAllocs[i]->address == b.chain[i]);
  CHECK(b.directAlloc->address == b.direct);
  return b;
}

// "chain_b+0x1c" for a frame inside a known function, else the hex address.
std::string symbolize(const BacktraceRun& b, uint64_t frame) {
  for (const auto& [name, start] : b.fn)
    if (frame >= start && frame < start + kFnSpan) {
      std::ostringstream o;
      o << name << "+0x" << std::hex << frame - start;
      return o.str();
    }
  std::ostringstream o;
  o << "0x" << std::hex << frame;
  return o.str();
}

std::string describeStack(const BacktraceRun& b, const std::vector<uint64_t>& frames) {
  std::string s;
  for (uint64_t f : frames) s += "\n  " + symbolize(b, f);
  return s;
}

bool inside(const BacktraceRun& b, uint64_t frame, const std::string& fn) {
  uint64_t start = b.fn.at(fn);
  return frame >= start && frame < start + kFnSpan;
}

// Requires that `frames` holds `expected` consecutively, starting at the first frame inside
// expected[0]; checks (without stopping) that this is the leaf.
void requireChain(const BacktraceRun& b, const std::vector<uint64_t>& frames,
                  const std::vector<std::string>& expected) {
  INFO("stack, leaf first:" << describeStack(b, frames));
  size_t p = 0;
  while (p < frames.size() && !inside(b, frames[p], expected[0])) ++p;
  REQUIRE(p < frames.size());
  CHECK(p == 0);  // no recorder or libc frames above the caller of malloc
  REQUIRE(frames.size() >= p + expected.size());
  for (size_t k = 1; k < expected.size(); ++k) {
    INFO("frame " << p + k << " should be in " << expected[k]);
    CHECK(inside(b, frames[p + k], expected[k]));
  }
}

}  // namespace

TEST_CASE("backtraces: the stack of an allocation is its call chain leaf first",
          "[recorder][backtrace]") {
  TempDir dir;
  BacktraceRun b = recordBacktrace(dir, {});
  for (const Alloc* a : b.chainAllocs) {
    CHECK(a->stackId != 0);
    requireChain(b, stackFrames(b.log, a->stackId), {"chain_c", "chain_b", "chain_a", "run"});
  }
  // The same call site gives the same (interned) stack; another path gives another one.
  CHECK(b.chainAllocs[1]->stackId == b.chainAllocs[0]->stackId);
  CHECK(b.chainAllocs[2]->stackId == b.chainAllocs[0]->stackId);
  CHECK(b.directAlloc->stackId != b.chainAllocs[0]->stackId);
  std::vector<uint64_t> direct = stackFrames(b.log, b.directAlloc->stackId);
  requireChain(b, direct, {"chain_c", "run"});
  // Below run: main and libc's start code, then the stack ends (no garbage frames).
  CHECK(direct.size() < 16);
}

TEST_CASE("backtraces: --depth N keeps the N innermost frames", "[recorder][backtrace]") {
  TempDir dir;
  BacktraceRun b = recordBacktrace(dir, {"--depth", "2"});
  for (const Alloc* a : b.chainAllocs) {
    std::vector<uint64_t> frames = stackFrames(b.log, a->stackId);
    INFO("stack, leaf first:" << describeStack(b, frames));
    REQUIRE(frames.size() == 2);
    CHECK(inside(b, frames[0], "chain_c"));
    CHECK(inside(b, frames[1], "chain_b"));
  }
  std::vector<uint64_t> direct = stackFrames(b.log, b.directAlloc->stackId);
  INFO("stack, leaf first:" << describeStack(b, direct));
  REQUIRE(direct.size() == 2);
  CHECK(inside(b, direct[0], "chain_c"));
  CHECK(inside(b, direct[1], "run"));
}

// Built without frame pointers, the chain breaks right above the leaf: the default (--unwind
// auto) sees that the walk did not reach libc's start code and unwinds with libunwind instead;
// --unwind dwarf always does.
TEST_CASE("backtraces: code without frame pointers is unwound from DWARF information",
          "[recorder][backtrace]") {
  for (std::string mode : {"auto", "dwarf"}) {
    INFO("--unwind " << mode);
    TempDir dir;
    BacktraceRun b = recordBacktrace(dir, {"--unwind", mode}, HMREC_PROG_BACKTRACE_NOFP);
    for (const Alloc* a : b.chainAllocs)
      requireChain(b, stackFrames(b.log, a->stackId), {"chain_c", "chain_b", "chain_a", "run"});
    requireChain(b, stackFrames(b.log, b.directAlloc->stackId), {"chain_c", "run"});
  }
}

// A frameless caller may leave anything in the frame-pointer register (libdw left 0xfff...f8,
// and the walk's bound check overflowed). Every allocation is still recorded and the program
// exits normally.
TEST_CASE("backtrace: garbage in the frame-pointer register", "[recorder][backtrace]") {
  using namespace hmrec;
  TempDir dir;
  Recording rec = record(dir, "badfp", {HMREC_PROG_BADFP, "5000"});
  requireRecorded(rec);
  REQUIRE(rec.result.out == "allocs 5000\n");
  LogSummary sum = summarizeLog(rec.logPath);
  CHECK(sum.heaps[0].allocs >= 5000);
  CHECK(sum.heaps[0].frees >= 5000);
}

// Stack-walk replay (ring.h, StackMemo): rec_paths reaches its two malloc sites along 9 paths of
// the same depth, so every walk starts at the same frame and a replayed walk must notice a
// difference anywhere, down to the outermost step frame. Every allocation's stack is exactly
// its own path, and two allocations share a stack id exactly when they share site and path.
TEST_CASE("backtraces: call paths of the same depth that differ in one frame",
          "[recorder][backtrace]") {
  for (std::string depth : {"32", "4"}) {
    INFO("--depth " << depth);
    TempDir dir;
    Recording rec = record(dir, "paths", {HMREC_PROG_PATHS}, {"--depth", depth});
    requireRecorded(rec);
    std::map<std::string, uint64_t> fn;
    struct Made {
      uint64_t address;
      int site;
      unsigned path;
    };
    std::vector<Made> made;
    for (const std::string& l : lines(rec.result.out)) {
      std::vector<std::string> f = fields(l);
      INFO("rec_paths line: " << l);
      if (f.size() == 3 && f[0] == "fn")
        fn[f[1]] = number(f[2]);
      else if (f.size() == 4 && f[0] == "alloc")
        made.push_back({number(f[1]), static_cast<int>(number(f[2])),
                        static_cast<unsigned>(std::stoul(f[3], nullptr, 16))});
      else
        FAIL("unexpected line");
    }
    REQUIRE(fn.size() == 5);
    REQUIRE(made.size() == 800);
    auto within = [&](uint64_t frame, const std::string& name) {
      return frame >= fn.at(name) && frame < fn.at(name) + kFnSpan;
    };

    Log log = readLog(rec.logPath);
    std::vector<Window> ws = windows(log);
    REQUIRE(ws.size() == 1);
    std::vector<const Alloc*> got;
    for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i)
      if (const auto* a = std::get_if<Alloc>(&log.records[i]); a && a->ev.thread == ws[0].thread)
        got.push_back(a);
    REQUIRE(got.size() == made.size());
    const size_t keep = std::stoul(depth);
    std::map<std::pair<int, unsigned>, uint32_t> stackOf;  // (site, path) -> stack id
    std::map<uint32_t, std::pair<int, unsigned>> pathOf;
    for (size_t k = 0; k < made.size(); ++k) {
      const Made& m = made[k];
      const Alloc& a = *got[k];
      REQUIRE(a.address == m.address);
      // Leaf first: leaf2 (site 2), leaf, the steps from bit 11 to bit 0, run.
      std::vector<std::string> want;
      if (m.site == 2) want.push_back("leaf2");
      want.push_back("leaf");
      for (int bit = 11; bit >= 0; --bit) want.push_back((m.path >> bit) & 1 ? "step_b" : "step_a");
      want.push_back("run");
      if (want.size() > keep) want.resize(keep);
      std::vector<uint64_t> frames = stackFrames(log, a.stackId);
      INFO("allocation " << k << ", site " << m.site << ", path " << std::hex << m.path);
      REQUIRE(frames.size() >= want.size());
      if (keep < 32) CHECK(frames.size() == keep);
      for (size_t i = 0; i < want.size(); ++i) {
        INFO("frame " << i << " should be in " << want[i]);
        CHECK(within(frames[i], want[i]));
      }
      auto key = std::make_pair(m.site, keep < 32 ? m.path >> (12 - (keep - m.site)) : m.path);
      auto [it, fresh] = stackOf.emplace(key, a.stackId);
      CHECK(it->second == a.stackId);
      if (fresh) {
        CHECK(pathOf.emplace(a.stackId, key).second);  // no other (site, path) has this stack
      }
    }
    if (keep == 32) CHECK(stackOf.size() == 18);  // 9 paths x 2 sites
  }
}

// Code outside every module (a JIT's): an allocation called from a trampoline in an anonymous
// executable page that left the frame-pointer register pointing nowhere. The walk ends at the
// trampoline's return address, as libunwind does (--unwind dwarf), without handing the stack to
// libunwind (guile's JIT'ed code sent half of its allocations there: ~150 ns each).
TEST_CASE("backtrace: a chain that breaks in code outside every module ends there",
          "[recorder][backtrace]") {
  // By --unwind mode: the frames as offsets into alloc_from_jit and the trampoline (each run has
  // its own addresses).
  std::map<std::string, std::vector<uint64_t>> stacks;
  for (std::string mode : {"auto", "dwarf"}) {
    INFO("--unwind " << mode);
    TempDir dir;
    Recording rec = recordWithStats(dir, "jit", {HMREC_PROG_JIT, "5"}, {"--unwind", mode});
    INFO(rec.describe());
    uint64_t jit = 0, fn = 0;
    std::vector<uint64_t> blocks;
    for (const std::string& l : lines(rec.result.out)) {
      std::vector<std::string> f = fields(l);
      if (f.size() == 2 && f[0] == "jit") jit = number(f[1]);
      if (f.size() == 3 && f[0] == "fn") fn = number(f[2]);
      if (f.size() == 2 && f[0] == "block") blocks.push_back(number(f[1]));
    }
    REQUIRE(jit);
    REQUIRE(fn);
    REQUIRE(blocks.size() == 5);
    Log log = readLog(rec.logPath);
    size_t seen = 0;
    for (const Record& r : log.records) {
      const auto* a = std::get_if<Alloc>(&r);
      if (!a || a->size != 24680) continue;
      REQUIRE(seen < blocks.size());
      CHECK(a->address == blocks[seen++]);
      std::vector<uint64_t> frames = stackFrames(log, a->stackId);
      INFO("frames: " << frames.size());
      REQUIRE(frames.size() == 2);
      CHECK(frames[0] > fn);
      CHECK(frames[0] < fn + 256);
      CHECK(frames[1] > jit);
      CHECK(frames[1] <= jit + 16);
      stacks[mode] = {frames[0] - fn, frames[1] - jit};
    }
    CHECK(seen == blocks.size());
    if (mode == "auto") {
      INFO(rec.result.err);
      CHECK(rec.result.err.find("stacks: 0 unwound by libunwind") != std::string::npos);
    }
  }
  CHECK(stacks["auto"] == stacks["dwarf"]);
}

// Modules loaded while recording: the recorder reads a module's unwind tables once, not at every
// dlopen, and reads them again after an unload. A module without frame pointers loaded after one
// with them (every other module already read), then unloaded and loaded again: an allocation
// made inside it still has its caller, run(), as the second frame (a walk by frame pointers
// alone would skip run, whose frame the module's code never set up).
TEST_CASE("backtraces: a frameless module loaded late, and again after dlclose, keeps its caller",
          "[recorder][backtrace]") {
  TempDir dir;
  Recording rec = recordWithStats(
      dir, "dlreload", {HMREC_PROG_DLRELOAD, HMREC_PROG_DLALLOC, HMREC_PROG_DLALLOC_NOFP});
  INFO(rec.describe());
  uint64_t run = 0;
  std::map<uint64_t, uint64_t> makers;  // size -> dlalloc_make's address
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 3 && f[0] == "fn" && f[1] == "run") run = number(f[2]);
    if (f.size() == 3 && f[0] == "make") makers[number(f[1])] = number(f[2]);
  }
  REQUIRE(run);
  REQUIRE(makers.size() == 3);
  Log log = readLog(rec.logPath);
  std::vector<Window> ws = windows(log);
  REQUIRE(ws.size() == 1);
  std::set<uint64_t> seen;
  for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i) {
    const auto* a = std::get_if<Alloc>(&log.records[i]);
    if (!a || a->ev.thread != ws[0].thread || !makers.count(a->size)) continue;
    INFO("allocation of " << a->size);
    REQUIRE(seen.insert(a->size).second);
    std::vector<uint64_t> frames = stackFrames(log, a->stackId);
    REQUIRE(frames.size() >= 3);
    CHECK(frames[0] > makers[a->size]);
    CHECK(frames[0] < makers[a->size] + 256);
    CHECK(frames[1] > run);
    CHECK(frames[1] < run + 256);
  }
  CHECK(seen.size() == 3);
  // The walk needed no libunwind: the module's rules were read.
  CHECK(rec.result.err.find("stacks: 0 unwound by libunwind") != std::string::npos);
}
