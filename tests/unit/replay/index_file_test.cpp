// The index file's neighbours (issue 17, item 10): a FIFO (or any non-regular file) at LOG.hmx
// once made every verb block in open(); a build interrupted by SIGINT/SIGTERM left its
// LOG.hmx.tmp.PID behind, and so does one killed by SIGKILL (removed by the next build).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_log.h"

using namespace rtest;
using namespace heapman::replay;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path = fs::temp_directory_path() / ("index-file-test-" + std::to_string(::getpid()));
  Dir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

std::string writeLog(const fs::path& dir, uint32_t gcs = 20) {
  std::string log = (dir / "w.hml").string();
  auto bytes = makeWorkload(4, gcs, 150);
  FILE* f = std::fopen(log.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return log;
}

std::vector<std::string> tmpFiles(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".hmx.tmp.") != std::string::npos)
      out.push_back(e.path().filename().string());
  return out;
}

// A PID no process has: a child that has exited and been reaped.
pid_t deadPid() {
  pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  ::waitpid(p, nullptr, 0);
  return p;
}

// Builds the index of `log` in a child that sends itself `sig` once the build has started;
// returns the child's wait status.
int buildAndSignal(const std::string& log, int sig) {
  pid_t p = ::fork();
  if (p == 0) {
    ::signal(SIGINT, SIG_DFL);  // as in heapman (Catch2 has handlers of its own)
    ::signal(SIGTERM, SIG_DFL);
    ReplayOptions o;
    o.notes = nullptr;
    o.checkpointEvents = 200;
    o.progress = [&](uint64_t done, uint64_t) {
      if (done == 3) ::raise(sig);
    };
    try {
      Replay r(log, o);
    } catch (...) {
    }
    ::_exit(0);  // not reached when the signal kills the build
  }
  int status = 0;
  ::waitpid(p, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("a FIFO at LOG.hmx is refused without blocking, and left alone", "[replay][index]") {
  Dir dir;
  std::string log = writeLog(dir.path);
  REQUIRE(::mkfifo((log + ".hmx").c_str(), 0644) == 0);
  ::setenv("XDG_CACHE_HOME", (dir.path / "cache").c_str(), 1);
  ::alarm(30);  // a blocking open fails the test instead of hanging it
  FILE* notes = std::tmpfile();
  ReplayOptions o;
  o.notes = notes;
  {
    Replay r(log, o);
    CHECK(r.index().built);
    CHECK(r.index().path.rfind((dir.path / "cache/heapman/w.hml-").string(), 0) == 0);
    r.seek(r.resolve("gc:10"));
  }
  {
    Replay r(log, o);  // the cached index is found past the FIFO
    CHECK_FALSE(r.index().built);
  }
  ::alarm(0);
  ::unsetenv("XDG_CACHE_HOME");
  std::rewind(notes);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), notes));
  std::fclose(notes);
  CHECK(text.find("heapman: index " + log +
                  ".hmx: not a regular file (a FIFO): not used; remove it to keep the index "
                  "there\n") != std::string::npos);
  CHECK(fs::is_fifo(log + ".hmx"));
  CHECK(tmpFiles(dir.path).empty());
}

TEST_CASE("a directory at LOG.hmx is refused too", "[replay][index]") {
  Dir dir;
  std::string log = writeLog(dir.path);
  fs::create_directory(log + ".hmx");
  ::setenv("XDG_CACHE_HOME", (dir.path / "cache").c_str(), 1);
  ReplayOptions o;
  o.notes = nullptr;
  Replay r(log, o);
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(r.index().path.rfind((dir.path / "cache/heapman/").string(), 0) == 0);
  CHECK(fs::is_directory(log + ".hmx"));
}

TEST_CASE("SIGINT or SIGTERM during an index build removes LOG.hmx.tmp.PID", "[replay][index]") {
  Dir dir;
  std::string log = writeLog(dir.path, 60);
  for (int sig : {SIGINT, SIGTERM}) {
    INFO("signal " << sig);
    int status = buildAndSignal(log, sig);
    REQUIRE(WIFSIGNALED(status));  // the process still dies of the signal
    CHECK(WTERMSIG(status) == sig);
    CHECK(tmpFiles(dir.path).empty());
    CHECK_FALSE(fs::exists(log + ".hmx"));
  }
}

TEST_CASE("the next build removes LOG.hmx.tmp.PID of dead builds, not of live ones",
          "[replay][index]") {
  Dir dir;
  std::string log = writeLog(dir.path);
  std::string dead = log + ".hmx.tmp." + std::to_string(deadPid());
  std::string live = log + ".hmx.tmp.1";  // init: alive
  std::string other = log + ".hmx.tmp.notapid";
  for (const std::string& p : {dead, live, other}) std::ofstream(p) << "partial";
  ReplayOptions o;
  o.notes = nullptr;
  Replay r(log, o);
  CHECK(r.index().built);
  CHECK(r.index().path == log + ".hmx");
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
}
