// Allocations libc makes for its caller (issue 17, item 7): Debian's libc keeps no frame
// pointers, so a frame-pointer walk from malloc back through strdup, fopen, stdio, getpwuid or
// qsort loses the chain right at libc. Under the default --unwind auto every such stack must
// still name the function that called into libc, and go on to its callers; blame must charge
// that function, not __GI___strdup. rec_libc_callers brackets each libc call with its own
// events and prints its functions' addresses (256-byte aligned, shorter than 256 bytes).
#include <sstream>

#include "recorder_support.h"

namespace {

using namespace hmrec;

constexpr uint64_t kFnSpan = 256;

struct Phase {
  const char* name;    // events NAME_begin, NAME_end
  const char* caller;  // the program's function that called into libc
  std::vector<std::string> below;  // the program's frames expected further out, in order
};

std::string describeStack(const std::map<std::string, uint64_t>& fn,
                          const std::vector<uint64_t>& frames) {
  std::ostringstream o;
  for (uint64_t f : frames) {
    o << "\n  0x" << std::hex << f;
    for (const auto& [name, start] : fn)
      if (f >= start && f < start + kFnSpan) o << " " << name << "+0x" << f - start;
  }
  return o.str();
}

}  // namespace

TEST_CASE("backtraces: allocations made inside libc name the function that called libc",
          "[recorder][backtrace]") {
  TempDir dir;
  Recording rec = record(dir, "libc_callers", {HMREC_PROG_LIBC_CALLERS, "/proc/self/status"});
  requireRecorded(rec);
  std::map<std::string, uint64_t> fn;
  uint64_t sorted = 0;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    INFO("rec_libc_callers line: " << l);
    if (f.size() == 3 && f[0] == "fn")
      fn[f[1]] = number(f[2]);
    else if (f.size() == 2 && f[0] == "sorted")
      sorted = number(f[1]);
    else
      FAIL("unexpected line");
  }
  REQUIRE(fn.size() == 7);
  REQUIRE(sorted > 0);
  auto inside = [&](uint64_t frame, const std::string& name) {
    return frame >= fn.at(name) && frame < fn.at(name) + kFnSpan;
  };
  auto known = [&](uint64_t frame) {
    for (const auto& [name, start] : fn)
      if (frame >= start && frame < start + kFnSpan) return true;
    return false;
  };

  Log log = readLog(rec.logPath);
  const std::vector<Phase> phases{
      {"strdup", "dup_name", {"run"}},
      {"fopen", "open_file", {"run"}},
      {"fread", "read_file", {"run"}},
      {"getpwuid", "get_user", {"run"}},
      // The comparison function allocates itself (the leaf), called back from inside qsort.
      {"qsort", "compare_alloc", {"sort_items", "run"}},
  };
  for (const Phase& phase : phases) {
    INFO("phase " << phase.name << ", caller " << phase.caller);
    std::vector<Window> ws =
        windows(log, std::string(phase.name) + "_begin", std::string(phase.name) + "_end");
    REQUIRE(ws.size() == 1);
    size_t allocs = 0;
    for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i) {
      const auto* a = std::get_if<Alloc>(&log.records[i]);
      if (!a || a->ev.thread != ws[0].thread) continue;
      ++allocs;
      std::vector<uint64_t> frames = stackFrames(log, a->stackId);
      INFO("allocation of " << a->size << " bytes, stack leaf first:" << describeStack(fn, frames));
      // The first of the program's frames is the caller; libc's own frames may come before it.
      size_t p = 0;
      while (p < frames.size() && !known(frames[p])) ++p;
      REQUIRE(p < frames.size());
      CHECK(inside(frames[p], phase.caller));
      // Then the caller's callers, in order: the next of the program's frames (libc's may lie
      // between, as qsort's between the comparison function and sort_items).
      size_t q = p + 1;
      for (const std::string& next : phase.below) {
        while (q < frames.size() && !known(frames[q])) ++q;
        INFO("frame " << q << " should be in " << next);
        REQUIRE(q < frames.size());
        CHECK(inside(frames[q], next));
        ++q;
      }
      // Then main and libc's __libc_start_call_main, where the stack ends: the walk stops at
      // the thread's entry frame, not in libc's start code below it (_start).
      CHECK(frames.size() == q + 2);
    }
    if (std::string(phase.name) == "qsort")
      CHECK(allocs == sorted);
    else if (std::string(phase.name) == "getpwuid")
      CHECK(allocs >= 1);
    else
      CHECK(allocs == 1);  // the copy, the FILE, the stream's buffer
  }

  // Blame charges the copy to dup_name (libc's frames are excluded from blame), not to strdup.
  RunResult blame =
      run(dir, "blame", {HMREC_HEAPMAN, "blame", rec.logPath, "--at", "strdup_end", "--csv", "-"});
  INFO("heapman blame:\n" << blame.out << blame.err);
  REQUIRE(blame.status == 0);
  std::vector<std::string> rows = lines(blame.out);
  REQUIRE(rows.size() >= 2);  // header, then the top function
  CHECK(rows[1].find("dup_name") != std::string::npos);
  CHECK(blame.out.find("strdup") == std::string::npos);
}
