// The recorded process's life: fork, exec, dlopen/dlclose, programs with their own SIGSEGV
// handler, crashes, and an unwritable log.
#include <csignal>
#include <filesystem>

#include "recorder_support.h"

namespace {

using namespace hmrec;

struct HeapCounts {
  uint64_t allocs = 0, frees = 0, bytes = 0;
};

HeapCounts countWindow(const Log& log, const Window& w) {
  HeapCounts c;
  for (size_t i = w.begin + 1; i < w.end; ++i) {
    const Record& r = log.records[i];
    if (const auto* a = std::get_if<Alloc>(&r); a && a->ev.thread == w.thread)
      ++c.allocs, c.bytes += a->size;
    if (const auto* f = std::get_if<Free>(&r); f && f->ev.thread == w.thread) ++c.frees;
  }
  return c;
}

bool hasEvent(const Log& log, const std::string& name) {
  for (const Record& r : log.records)
    if (const auto* e = std::get_if<CustomEvent>(&r))
      if (log.strings.count(e->nameId) && log.strings.at(e->nameId) == name) return true;
  return false;
}

}  // namespace

// fork: the parent's log and the child's log (FILE.PID) are both complete; each holds its own
// process's events; the child's header names the parent.
TEST_CASE("fork: parent and child logs are both complete", "[recorder][fork]") {
  TempDir dir;
  Recording rec = record(dir, "fork", {HMREC_PROG_FORK});
  requireRecorded(rec);
  uint64_t parentPid = 0, childPid = 0;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 2 && f[0] == "parent") parentPid = number(f[1]);
    if (f.size() == 2 && f[0] == "child") childPid = number(f[1]);
  }
  REQUIRE(parentPid != 0);
  REQUIRE(childPid != 0);

  Log parent = readLog(rec.logPath);
  CHECK(parent.complete);
  CHECK(parent.header.pid == parentPid);
  std::vector<Window> pw = windows(parent);
  REQUIRE(pw.size() == 1);
  HeapCounts pc = countWindow(parent, pw[0]);
  CHECK(pc.allocs == 40);  // 10 before the fork, 30 after; none of the child's
  CHECK(pc.frees == 40);
  CHECK(pc.bytes == (10 * 100 + 45) + (30 * 100 + 435));
  CHECK(!hasEvent(parent, "child_begin"));
  (void)summarizeLog(rec.logPath);

  const std::string childPath = rec.logPath + "." + std::to_string(childPid);
  INFO("child log " << childPath);
  REQUIRE(std::filesystem::exists(childPath));
  CHECK(rec.alsoWrote == std::vector<std::string>{childPath});  // heaprec lists it
  Log child = readLog(childPath);
  CHECK(child.complete);
  CHECK(child.header.pid == childPid);
  CHECK(child.header.parentPid == parentPid);
  std::vector<Window> cw = windows(child, "child_begin", "child_end");
  REQUIRE(cw.size() == 1);
  HeapCounts cc = countWindow(child, cw[0]);
  CHECK(cc.allocs == 20);
  CHECK(cc.frees == 20);
  CHECK(cc.bytes == 20 * 1000 + 190);
  (void)summarizeLog(childPath);
}

// exec: by default the exec'd program is not recorded (the module is not loaded into it and
// LD_PRELOAD no longer names it); the log of the program before exec is complete.
TEST_CASE("exec: the exec'd program is not recorded by default", "[recorder][exec]") {
  TempDir dir;
  Recording rec = record(dir, "exec", {HMREC_PROG_EXEC, "parent"});
  requireRecorded(rec);
  INFO(rec.result.out);
  CHECK(rec.result.out.find("preload-mapped no\n") != std::string::npos);
  CHECK(rec.result.out.find("heapman_preload") == std::string::npos);

  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  std::vector<Window> ws = windows(log);
  REQUIRE(ws.size() == 1);
  HeapCounts c = countWindow(log, ws[0]);
  CHECK(c.allocs == 5);
  CHECK(c.frees == 5);
  CHECK(c.bytes == 5 * 777);
  CHECK(!hasEvent(log, "child"));
  for (const Record& r : log.records)
    if (const auto* a = std::get_if<Alloc>(&r)) CHECK(a->size != 4242);
  // One log only.
  size_t logs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    logs += e.path().filename().string().rfind("exec.hml", 0) == 0;
  CHECK(logs == 1);
}

// dlopen/dlclose: ModuleLoad (path, base) and ModuleUnload (base) records bracket the module's
// life; an allocation made inside the module has its leaf frame inside the module.
TEST_CASE("dlopen: ModuleLoad and ModuleUnload around an allocating module",
          "[recorder][dlopen]") {
  TempDir dir;
  Recording rec = record(dir, "dlopen", {HMREC_PROG_DLOPEN, HMREC_PROG_DLALLOC});
  requireRecorded(rec);
  uint64_t base = 0, addr = 0;
  std::string path;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 3 && f[0] == "module") base = number(f[1]), path = f[2];
    if (f.size() == 2 && f[0] == "alloc") addr = number(f[1]);
  }
  REQUIRE(base != 0);
  REQUIRE(addr != 0);

  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  std::vector<Window> ws = windows(log);
  REQUIRE(ws.size() == 1);
  std::optional<size_t> load, alloc, freed, unload;
  const ModuleLoad* module = nullptr;
  for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i) {
    const Record& r = log.records[i];
    if (const auto* m = std::get_if<ModuleLoad>(&r); m && m->base == base) load = i, module = m;
    if (const auto* m = std::get_if<ModuleUnload>(&r); m && m->base == base) unload = i;
    if (const auto* a = std::get_if<Alloc>(&r); a && a->address == addr && a->size == 777)
      alloc = i;
    if (const auto* f = std::get_if<Free>(&r); f && f->address == addr && alloc) freed = i;
  }
  REQUIRE(load);
  REQUIRE(alloc);
  REQUIRE(freed);
  REQUIRE(unload);
  CHECK(*load < *alloc);
  CHECK(*alloc < *freed);
  CHECK(*freed < *unload);
  CHECK(std::filesystem::path(module->path).filename() == std::filesystem::path(path).filename());
  CHECK(module->size > 0);
  std::vector<uint64_t> frames = stackFrames(log, std::get<Alloc>(log.records[*alloc]).stackId);
  REQUIRE(!frames.empty());
  CHECK(frames[0] >= module->base);
  CHECK(frames[0] < module->base + module->size);
}

// A program's own SIGSEGV handler still gets its faults (with the right address) and the program
// goes on; the log is complete.
TEST_CASE("signals: a program's own SIGSEGV handler still works", "[recorder][signals]") {
  TempDir dir;
  Recording rec = record(dir, "sigsegv", {HMREC_PROG_SIGSEGV});
  requireRecorded(rec);
  CHECK(rec.result.out == "handled 3\n");
  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  std::vector<Window> ws = windows(log);
  REQUIRE(ws.size() == 1);
  HeapCounts c = countWindow(log, ws[0]);
  CHECK(c.allocs == 3);
  CHECK(c.frees == 3);
  CHECK(c.bytes == 900);
}

// A crashing program: heaprec exits 128 + signal; the log is readable (possibly without footer)
// and holds every allocation made before the crash.
TEST_CASE("crash: the log is readable up to the crash", "[recorder][crash]") {
  for (auto [mode, sig] : {std::pair{"segv", SIGSEGV}, std::pair{"abort", SIGABRT}}) {
    INFO("mode " << mode);
    TempDir dir;
    const uint64_t n = 200000;
    Recording rec = record(dir, "crash", {HMREC_PROG_CRASH, mode, std::to_string(n)});
    INFO(rec.describe());
    CHECK(rec.result.status == 128 + sig);
    CHECK(rec.result.out == "allocs " + std::to_string(n) + "\n");
    std::vector<std::string> heaprecLines;
    for (const std::string& l : lines(rec.result.err))
      if (l.rfind("heaprec", 0) == 0) heaprecLines.push_back(l);
    CHECK(heaprecLines.size() <= 1);

    Log log = readLog(rec.logPath);
    (void)summarizeLog(rec.logPath);
    std::optional<size_t> begin;
    uint32_t thread = 0;
    uint64_t allocs = 0;
    for (size_t i = 0; i < log.records.size(); ++i) {
      const Record& r = log.records[i];
      if (const auto* e = std::get_if<CustomEvent>(&r); e && eventName(log, *e) == "begin")
        begin = i, thread = e->ev.thread;
      if (const auto* a = std::get_if<Alloc>(&r);
          a && begin && a->ev.thread == thread && a->size == 64)
        ++allocs;
    }
    REQUIRE(begin);
    CHECK(allocs == n);
  }
}

// An unwritable log: the program runs to the end with its output and exit status unchanged;
// heaprec says what failed on one stderr line (and does not claim to have written the log).
TEST_CASE("unwritable log: -o /dev/full", "[recorder][devfull]") {
  TempDir dir;
  std::vector<std::string> prog = {HMREC_PROG_OUTPUT, "exit", "7", "a", "b"};
  RunResult plain = run(dir, "plain", prog);
  REQUIRE(plain.status == 7);
  Recording rec = recordTo(dir, "full", "/dev/full", prog);
  INFO(rec.describe());
  CHECK(rec.result.status == 7);
  CHECK(rec.result.out == plain.out);
  CHECK(!rec.hasWroteLine);
  // The recorder says so when it happens (at start, here): the program's stderr is unchanged
  // but for exactly that one line, wherever it falls.
  std::vector<std::string> ours, rest;
  for (const std::string& l : lines(rec.result.err))
    (l.rfind("heaprec: ", 0) == 0 ? ours : rest).push_back(l);
  CHECK(rest == lines(plain.err));
  REQUIRE(ours.size() == 1);
  std::vector<std::string> extra = ours;
  CHECK(extra[0].find("/dev/full") != std::string::npos);
}
