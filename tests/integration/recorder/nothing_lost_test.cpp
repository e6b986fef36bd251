// Nothing lost without saying so: a program that dies of a signal while its threads allocate,
// heaprec's own wait status, and a program that closes the log's descriptor behind the hooks.
//
// The fatal-signal cases run HEAPMAN_STRESS_RUNS times each (default 2); the stress runs, 50 each:
//   cmake --build build --target recorder_stress
#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include "recorder_support.h"

namespace {

using namespace hmrec;

int stressRuns() {
  const char* env = std::getenv("HEAPMAN_STRESS_RUNS");
  int n = env ? std::atoi(env) : 0;
  return n > 0 ? n : 2;
}

// What the log holds of rec_sigthreads' workers: their 48-byte allocations (the workers are every
// thread but the first to start), and the events it says it lost.
struct WorkerCounts {
  uint64_t allocs = 0, lost = 0;
};

WorkerCounts workerCounts(const Log& log) {
  WorkerCounts c;
  std::optional<uint32_t> mainThread;
  for (const Record& r : log.records) {
    if (const auto* s = std::get_if<ThreadStart>(&r); s && !mainThread) mainThread = s->index;
    if (const auto* a = std::get_if<Alloc>(&r); a && a->size == 48 && a->ev.thread != mainThread)
      ++c.allocs;
    if (const auto* l = std::get_if<Lost>(&r)) c.lost += l->count;
  }
  return c;
}

}  // namespace

// Workers allocate without pause while the main thread prints how many allocations had returned
// and dies: each of those was committed before the signal and must be in the log, at 8 and 32
// threads, whatever the signal. Any record that cannot be written is counted in a Lost record
// (the workers' in-flight ones at most, never a committed one).
TEST_CASE("crash: a fatal signal under allocating threads loses no committed record",
          "[recorder][crash]") {
  struct Death {
    const char* how;
    int signal;
  };
  const Death deaths[] = {{"15", SIGTERM}, {"2", SIGINT},      {"10", SIGUSR1},
                          {"segv", SIGSEGV}, {"abort", SIGABRT}};
  const int runs = stressRuns();
  for (int threads : {8, 32}) {
    for (const Death& d : deaths) {
      for (int run = 0; run < runs; ++run) {
        INFO(threads << " threads, " << d.how << ", run " << run);
        TempDir dir;
        Recording rec = record(dir, "sigthreads",
                               {HMREC_PROG_SIGTHREADS, std::to_string(threads), d.how});
        INFO(rec.describe());
        REQUIRE(rec.result.signal == d.signal);
        std::vector<std::string> out = lines(rec.result.out);
        REQUIRE(out.size() == 1);
        std::vector<std::string> f = fields(out[0]);
        REQUIRE(f.size() == 2);
        const uint64_t returned = number(f[1]);
        REQUIRE(returned > 0);
        Log log = readLog(rec.logPath);
        WorkerCounts got = workerCounts(log);
        INFO("log: " << got.allocs << " worker allocations, " << got.lost << " lost; the program "
                     << "counted " << returned);
        CHECK(got.allocs >= returned);
        CHECK(got.lost <= static_cast<uint64_t>(threads));
        CHECK(log.complete);  // finished (footer written) before the process died
      }
    }
  }
}

// heaprec ends as the program did: killed by the same signal, so that a shell reports it and a
// parent's waitpid sees WIFSIGNALED (not an exit code of 128 + N).
TEST_CASE("crash: heaprec dies of the signal that killed the program", "[recorder][crash]") {
  for (auto [how, sig] : {std::pair<const char*, int>{"segv", SIGSEGV}, {"abort", SIGABRT},
                          {"15", SIGTERM}}) {
    INFO(how);
    TempDir dir;
    Recording rec = record(dir, "status", {HMREC_PROG_SIGTHREADS, "1", how, "10"});
    INFO(rec.describe());
    CHECK(rec.result.signal == sig);
    CHECK(rec.hasWroteLine);
  }
  // Through a shell, which then says what killed it.
  TempDir dir;
  RunResult r = run(dir, "bash",
                    {"/bin/bash", "-c",
                     std::string(HMREC_HEAPREC) + " run -o " + dir.file("b.hml") + " -- " +
                         HMREC_PROG_SIGTHREADS + " 1 segv 10; echo status $?"});
  INFO(r.err);
  CHECK(r.out.find("status 139") != std::string::npos);
  CHECK(r.err.find("Segmentation fault") != std::string::npos);
}

// A run that writes no log says so and does not claim an earlier run's file as its own.
TEST_CASE("heaprec: a program that cannot start leaves no log claimed", "[recorder][crash]") {
  TempDir dir;
  const std::string log = dir.file("s.hml");
  RunResult first = run(dir, "ls", {HMREC_HEAPREC, "run", "-o", log, "--", "/bin/true"});
  REQUIRE(first.status == 0);
  REQUIRE(std::filesystem::file_size(log) > 0);
  const auto size = std::filesystem::file_size(log);
  RunResult second =
      run(dir, "missing", {HMREC_HEAPREC, "run", "-o", log, "--", "/nonexistent/prog"});
  INFO(second.err);
  CHECK(second.status == 127);
  CHECK(second.err.find("wrote") == std::string::npos);
  CHECK(second.err.find("heaprec: no log written: the program could not be started; " + log +
                        " is an earlier run's log, left as it was") != std::string::npos);
  CHECK(std::filesystem::file_size(log) == size);
  // Without an earlier log: no file is left behind either.
  const std::string fresh = dir.file("fresh.hml");
  RunResult third =
      run(dir, "missing2", {HMREC_HEAPREC, "run", "-o", fresh, "--", "/nonexistent/prog"});
  CHECK(third.status == 127);
  CHECK(third.err.find("heaprec: no log written: the program could not be started\n") !=
        std::string::npos);
  CHECK(!std::filesystem::exists(fresh));
}

// A log in a place where no file can be made says why, not that the directory is missing.
TEST_CASE("heaprec: -o in /proc says no file can be created there", "[recorder][crash]") {
  TempDir dir;
  RunResult r = run(dir, "proc", {HMREC_HEAPREC, "run", "-o", "/proc/x.hml", "--", "/bin/true"});
  CHECK(r.status == 2);
  CHECK(r.err.find("does not exist") == std::string::npos);
  CHECK(r.err.find("no file can be created in /proc") != std::string::npos);
}

// Descriptors closed by raw system calls, which no hook sees: the recorder finds its descriptor
// gone (or naming the program's file) when it next writes, opens the log again by its path and
// goes on; the program's file gets only the program's bytes.
TEST_CASE("descriptors: a log closed by raw system calls is reopened, the program's file untouched",
          "[recorder][crash]") {
  const uint64_t n = 200000;
  SECTION("close_range, then the program's file on every number") {
    TempDir dir;
    const std::string mine = dir.file("mine.txt");
    Recording rec = record(dir, "rawclose", {HMREC_PROG_HOSTILE, "rawclose", std::to_string(n), mine});
    requireRecorded(rec);
    CHECK(rec.result.out == "ok\n");
    CHECK(std::filesystem::file_size(mine) == 5);  // "mine\n" and nothing else
    Log log = readLog(rec.logPath);
    CHECK(log.complete);
    CHECK(allocsAfterBegin(log) == n);
  }
  SECTION("a close() loop through the system call") {
    TempDir dir;
    Recording rec = record(dir, "rawcloseloop", {HMREC_PROG_HOSTILE, "rawcloseloop", std::to_string(n)});
    requireRecorded(rec);
    CHECK(rec.result.out == "ok\n");
    Log log = readLog(rec.logPath);
    CHECK(log.complete);
    CHECK(allocsAfterBegin(log) == n);
  }
}

// The recorder's writer thread starts only when it is due: a short program stays single-
// threaded, as it would be without the recorder.
TEST_CASE("threads: a short program sees no thread of the recorder's", "[recorder][crash]") {
  TempDir dir;
  Recording rec = record(dir, "threads", {HMREC_PROG_HOSTILE, "threads-now", "1000"});
  requireRecorded(rec);
  CHECK(rec.result.out == "threads 1\n");
  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  CHECK(allocsAfterBegin(log) == 1000);
}

// unshare(CLONE_NEWUSER) refuses a multi-threaded process: once the writer thread runs, it ends
// before the call (and a later one goes on); nothing recorded is lost. Also through the real
// unshare(1), as a user would run it.
TEST_CASE("threads: unshare of a user namespace works under the recorder", "[recorder][crash]") {
  TempDir dir;
  RunResult plain = run(dir, "plain", {"/usr/bin/unshare", "--user", "--map-root-user", "id", "-u"});
  if (plain.status != 0) {
    WARN("unshare --user does not work here without the recorder either: " << plain.err);
    return;
  }
  Recording rec = record(dir, "unshare", {HMREC_PROG_HOSTILE, "unshare", "20000", "200"});
  requireRecorded(rec);
  CHECK(rec.result.out == "threads 2\nunshare 0\nthreads 1\n");
  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  CHECK(allocsAfterBegin(log) == 40000);
  Recording tool = record(dir, "tool", {"/usr/bin/unshare", "--user", "--map-root-user", "id", "-u"});
  requireRecorded(tool);
  CHECK(tool.result.out == "0\n");
}

// A log that ends early (a full disk, SIGKILL) cannot know what it lost after its end:
// heapman info says the count is unknown rather than 0.
TEST_CASE("heaprec: a log that ends early says its lost count is unknown", "[recorder][crash]") {
  TempDir dir;
  Recording rec = record(dir, "cut", {HMREC_PROG_HOSTILE, "closeloop", "20000"});
  requireRecorded(rec);
  RunResult whole = run(dir, "info", {HMREC_HEAPMAN, "info", rec.logPath});
  CHECK(whole.out.find("\nlost       0 events\n") != std::string::npos);
  std::filesystem::resize_file(rec.logPath, std::filesystem::file_size(rec.logPath) / 2);
  RunResult cut = run(dir, "info-cut", {HMREC_HEAPMAN, "info", rec.logPath});
  INFO(cut.out << cut.err);
  CHECK(cut.status == 0);
  CHECK(cut.out.find("status     TRUNCATED") != std::string::npos);
  CHECK(cut.out.find("\nlost       unknown: the log ends early") != std::string::npos);
}

// The version heaprec prints and writes into the log's header is the project's (CMake's).
TEST_CASE("heaprec: --version and the log header name the project's version", "[recorder]") {
  TempDir dir;
  RunResult v = run(dir, "version", {HMREC_HEAPREC, "--version"});
  CHECK(v.status == 0);
  CHECK(v.out == std::string("heaprec ") + HMREC_VERSION + "\n");
  Recording rec = record(dir, "true", {"/bin/true"});
  requireRecorded(rec);
  CHECK(readLog(rec.logPath).header.recorderVersion == std::string("heaprec ") + HMREC_VERSION);
}
