// The recorder must never change or destroy what it records: programs that take file
// descriptor numbers, close every descriptor, start programs every way there is, die of signals,
// overflow their stack, or whose first heap call is dlopen; and heaprec itself killed.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "recorder_support.h"

namespace {

using namespace hmrec;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// heaprec's own lines on stderr (its report and anything the recorder said).
std::vector<std::string> heaprecLines(const std::string& err) {
  std::vector<std::string> out;
  for (const std::string& l : lines(err))
    if (l.rfind("heaprec", 0) == 0) out.push_back(l);
  return out;
}

}  // namespace

// A program that dup2s its own file onto 3..7 gets exactly its bytes there; the log (which used
// to sit on 3) is whole.
TEST_CASE("descriptors: dup2 onto 3..7 writes the program's file, not the log",
          "[recorder][hardening]") {
  TempDir dir;
  const std::string file = dir.file("mine.txt");
  Recording rec = record(dir, "dup2", {HMREC_PROG_HOSTILE, "dup2", "1000", file});
  requireRecorded(rec);
  CHECK(rec.result.out == "ok\n");
  CHECK(slurp(file) == "fd3\nfd4\nfd5\nfd6\nfd7\n");
  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  CHECK(allocsAfterBegin(log) == 1000);
}

// The same with a real shell: `exec 3>FILE` (bash keeps its own descriptors from 10 up, and 255).
TEST_CASE("descriptors: bash's exec 3>FILE and 7>FILE", "[recorder][hardening]") {
  TempDir dir;
  const std::string three = dir.file("three.txt"), seven = dir.file("seven.txt");
  Recording rec = record(dir, "bash", {"/bin/bash", "-c",
                                       "exec 3>" + three + "; echo hi >&3; exec 7>" + seven +
                                           "; echo seven >&7; exec 3>&-"});
  requireRecorded(rec);
  CHECK(slurp(three) == "hi\n");
  CHECK(slurp(seven) == "seven\n");
  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  CHECK(summarizeLog(rec.logPath).events > 100);
}

// close_range(3, ~0U), closefrom(3) and a close() loop over every number: the log survives.
TEST_CASE("descriptors: a program that closes every descriptor keeps its log",
          "[recorder][hardening]") {
  for (const char* mode : {"closerange", "closefrom", "closeloop"}) {
    INFO("mode " << mode);
    TempDir dir;
    Recording rec = record(dir, mode, {HMREC_PROG_HOSTILE, mode, "5000"});
    requireRecorded(rec);
    CHECK(rec.result.out == "ok\n");
    Log log = readLog(rec.logPath);
    CHECK(log.complete);
    CHECK(allocsAfterBegin(log) == 5000);
  }
}

// Python's subprocess forks, closes every descriptor in the child (close_fds) and runs a
// preexec_fn before exec: the child's log is whole and nothing reaches the program's streams.
TEST_CASE("fork: a child that closes its descriptors and execs leaves the program's output alone",
          "[recorder][hardening]") {
  TempDir dir;
  std::vector<std::string> prog = {
      "/usr/bin/python3", "-c",
      "import subprocess, sys\n"
      "r = subprocess.run(['/bin/echo', 'child'], preexec_fn=lambda: None)\n"
      "print('done', r.returncode)\n"
      "sys.stderr.write('err line\\n')\n"};
  RunResult plain = run(dir, "plain", prog);
  REQUIRE(plain.status == 0);
  Recording rec = record(dir, "python", prog);
  requireRecorded(rec);
  CHECK(rec.result.out == plain.out);
  CHECK(rec.programErr == plain.err);
  REQUIRE(rec.alsoWrote.size() == 1);  // the forked child's log, BASE.PID
  Log child = readLog(rec.alsoWrote[0]);
  CHECK(child.complete);
  CHECK(child.header.parentPid == readLog(rec.logPath).header.pid);
}

// --follow-exec: every process started (posix_spawn, vfork, fork, system, popen) writes a log of
// its own, named BASE.PID.exec (a fork child BASE.PID); none truncates the parent's, which holds
// all its allocations.
TEST_CASE("follow-exec: each started program writes its own log, the parent's stays whole",
          "[recorder][hardening]") {
  TempDir dir;
  Recording rec = record(dir, "spawn", {HMREC_PROG_SPAWN, "/bin/echo", "4000"}, {"--follow-exec"});
  requireRecorded(rec);
  std::map<std::string, uint64_t> pids;
  std::vector<std::string> echoed;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 2 && (f[0] == "spawn" || f[0] == "vfork" || f[0] == "fork"))
      pids[f[0]] = number(f[1]);
    else
      echoed.push_back(l);
  }
  CHECK(echoed == std::vector<std::string>{"spawned", "vforked", "forked", "system", "popen"});
  REQUIRE(pids.size() == 3);
  Log parent = readLog(rec.logPath);
  CHECK(parent.complete);
  std::vector<Window> ws = windows(parent);
  REQUIRE(ws.size() == 1);
  CHECK(allocsAfterBegin(parent) == 4000);

  const std::string base = rec.logPath;
  std::set<std::string> expected = {
      base + "." + std::to_string(pids["spawn"]) + ".exec",
      base + "." + std::to_string(pids["vfork"]) + ".exec",
      base + "." + std::to_string(pids["fork"]),  // the fork child before its exec
      base + "." + std::to_string(pids["fork"]) + ".exec"};
  std::set<std::string> listed(rec.alsoWrote.begin(), rec.alsoWrote.end());
  for (const std::string& e : expected) {
    INFO("expected log " << e);
    CHECK(listed.count(e) == 1);
  }
  // system() and popen() run /bin/sh, which runs echo: two more programs, four more logs.
  CHECK(listed.size() == expected.size() + 4);
  for (const std::string& path : listed) {
    INFO("log " << path);
    Log log = readLog(path);
    CHECK(log.complete);
    CHECK(path.find(".exec.exec") == std::string::npos);
  }
}

// A program whose first heap call is dlopen: the recorder's own look-ups (dlsym) happen inside
// it and must not disturb glibc's dlerror state (it aborted with "double free").
TEST_CASE("dlopen as the first heap call", "[recorder][hardening]") {
  TempDir dir;
  Recording rec = record(dir, "dlopen_first", {HMREC_PROG_DLOPEN_FIRST});
  requireRecorded(rec);
  CHECK(rec.result.out == "ok\n");
  CHECK(readLog(rec.logPath).complete);
}

// Signals whose default action ends the process: the log holds every allocation made before.
TEST_CASE("signals: a terminating signal with the default action loses nothing",
          "[recorder][hardening]") {
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGPIPE, SIGALRM}) {
    INFO("signal " << sig);
    TempDir dir;
    const uint64_t n = 200000;
    Recording rec = record(dir, "raise", {HMREC_PROG_HOSTILE, "raise", std::to_string(n),
                                          std::to_string(sig)});
    INFO(rec.describe());
    CHECK(rec.result.status == 128 + sig);
    Log log = readLog(rec.logPath);
    CHECK(allocsAfterBegin(log) == n);
  }
}

// A stack overflow's SIGSEGV reaches the recorder's handler (on an alternate stack).
TEST_CASE("signals: a stack overflow loses nothing", "[recorder][hardening]") {
  TempDir dir;
  const uint64_t n = 100000;
  Recording rec = record(dir, "overflow", {HMREC_PROG_HOSTILE, "overflow", std::to_string(n)});
  INFO(rec.describe());
  CHECK(rec.result.status == 128 + SIGSEGV);
  CHECK(allocsAfterBegin(readLog(rec.logPath)) == n);
}

// The program's own handler is installed as given (SA_SIGINFO, its mask) and runs; sigaction
// reports the program's view.
TEST_CASE("signals: a program's own SIGTERM handler runs as installed", "[recorder][hardening]") {
  TempDir dir;
  Recording rec = record(dir, "handler", {HMREC_PROG_HOSTILE, "handler", "100"});
  requireRecorded(rec);
  CHECK(rec.result.out == "handled " + std::to_string(SIGTERM) + " 1\nview handler default\n");
  CHECK(readLog(rec.logPath).complete);
}

// SIGTERM to heaprec: the program gets it (heaprec waits for it instead of leaving it orphaned)
// and heaprec returns its status; the log holds everything before.
TEST_CASE("heaprec: a signal to heaprec reaches the program", "[recorder][hardening]") {
  for (int sig : {SIGTERM, SIGHUP}) {
    INFO("signal " << sig);
    TempDir dir;
    const std::string ready = dir.file("ready"), log = dir.file("wait.hml");
    const uint64_t n = 100000;
    std::string script = std::string("\"$0\" run -o ") + log + " -- \"$1\" wait " +
                         std::to_string(n) + " " + ready +
                         " & h=$!; for i in $(seq 600); do [ -e " + ready +
                         " ] && break; sleep 0.05; done; kill -" + std::to_string(sig) +
                         " $h; wait $h; echo status $?";
    RunResult r = run(dir, "kill", {"/bin/sh", "-c", script, HMREC_HEAPREC, HMREC_PROG_HOSTILE});
    INFO(r.out << r.err);
    CHECK(r.out == "status " + std::to_string(128 + sig) + "\n");
    CHECK(r.seconds < 30);
    CHECK(allocsAfterBegin(readLog(log)) == n);
    std::vector<std::string> ours = heaprecLines(r.err);
    REQUIRE(ours.size() == 1);
    CHECK(ours[0].find("killed by SIG") != std::string::npos);
  }
}

// Threads that never allocate are logged too: a ThreadStart and a ThreadStop each.
TEST_CASE("threads: a thread that never allocates is logged", "[recorder][hardening]") {
  TempDir dir;
  Recording rec = record(dir, "threads", {HMREC_PROG_HOSTILE, "threads", "10", "3"});
  requireRecorded(rec);
  std::set<uint64_t> tids;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 2 && f[0] == "tid") tids.insert(number(f[1]));
  }
  REQUIRE(tids.size() == 3);
  Log log = readLog(rec.logPath);
  std::map<uint32_t, uint64_t> started;  // recorder thread index -> tid
  std::set<uint32_t> stopped;
  for (const Record& r : log.records) {
    if (const auto* s = std::get_if<ThreadStart>(&r)) started[s->index] = s->osTid;
    if (const auto* s = std::get_if<ThreadStop>(&r)) stopped.insert(s->index);
  }
  for (uint64_t tid : tids) {
    INFO("tid " << tid);
    auto it = std::find_if(started.begin(), started.end(),
                           [&](const auto& kv) { return kv.second == tid; });
    REQUIRE(it != started.end());
    CHECK(stopped.count(it->first) == 1);
  }
}

// What cannot be recorded is refused before it runs, saying why (exit 2, nothing run).
TEST_CASE("heaprec: refuses what it cannot record, saying why", "[recorder][hardening]") {
  TempDir dir;
  const std::string marker = dir.file("ran");
  struct Case {
    std::vector<std::string> argv;
    std::string says;
  };
  std::vector<Case> cases = {
      {{HMREC_HEAPREC, "run", "-o", dir.file("missing/x.hml"), "--", "/bin/true"},
       "the directory " + dir.file("missing") + " does not exist"},
      {{HMREC_HEAPREC, "run", "-o", dir.path(), "--", "/bin/true"}, "it is a directory"},
      {{HMREC_HEAPREC, "run", "-o", dir.file("s.hml"), "--", "/sbin/ldconfig", "-p"},
       "is statically linked"},
  };
  if (std::filesystem::exists("/usr/bin/mono-sgen"))
    cases.push_back({{HMREC_HEAPREC, "run", "-o", dir.file("m.hml"), "--", "/usr/bin/mono-sgen",
                      "x.exe"},
                     "run the program on mono-boehm"});
  for (const Case& c : cases) {
    INFO(c.argv[4] << " " << c.argv[c.argv.size() - 1]);
    RunResult r = run(dir, "refused", c.argv);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

// A log that cannot be finished (the file size limit, as a full disk would; 20 kB, a fifth of what
// the program's 3 M allocations compress to, ~98 kB, which a 100 kB limit let through): the
// program runs to its end unchanged, and heaprec says why the log is truncated: the recorder's
// own message, not "the program did not exit normally".
TEST_CASE("heaprec: a log cut short by a full disk says why", "[recorder][hardening]") {
  TempDir dir;
  const std::string log = dir.file("full.hml");
  RunResult r = run(dir, "full", {"/usr/bin/prlimit", "--fsize=20000", HMREC_HEAPREC, "run", "-o",
                                  log, "--", HMREC_PROG_HOSTILE, "closerange", "3000000"});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "ok\n");
  std::vector<std::string> ours = heaprecLines(r.err);
  REQUIRE(ours.size() == 2);
  CHECK(ours[0] == "heaprec: writing " + log + " failed (File too large); recording stopped");
  CHECK(ours[1].find("truncated: the recorder could not finish it (see above)") != std::string::npos);
  CHECK(!readLog(log).complete);
}

// A fork storm from four threads at once: every child's log is complete and holds exactly its
// own allocations; the parent's is complete too.
TEST_CASE("fork: 4 threads forking 16 children each at once", "[recorder][hardening]") {
  TempDir dir;
  Recording rec = record(dir, "storm", {HMREC_PROG_HOSTILE, "forkstorm", "2000", "16"});
  requireRecorded(rec);
  std::vector<std::string> children;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    if (f.size() == 2 && f[0] == "child") children.push_back(rec.logPath + "." + f[1]);
  }
  REQUIRE(children.size() == 64);
  CHECK(readLog(rec.logPath).complete);
  std::set<std::string> listed(rec.alsoWrote.begin(), rec.alsoWrote.end());
  size_t complete = 0, exact = 0;
  for (const std::string& path : children) {
    Log log = readLog(path);
    complete += log.complete;
    exact += allocsAfterBegin(log) == 2000;
  }
  CHECK(complete == 64);
  CHECK(exact == 64);
  CHECK(listed.size() == 20);  // heaprec lists 20 and says how many more
}
