// A log holds the recorded program's memory (RAM dumps: every live object's bytes), so heaprec
// writes it private, like the kernel writes a core file: mode 0600 whatever the umask, for the
// log, the logs of the program's children (FILE.PID, FILE.PID.exec), and an existing file given
// to -o.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "recorder_support.h"

using namespace hmrec;

namespace {

unsigned modeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Sets the process's umask for its lifetime (heaprec and the program inherit it).
class Umask {
 public:
  explicit Umask(mode_t mask) : old_(umask(mask)) {}
  ~Umask() { umask(old_); }
  Umask(const Umask&) = delete;
  Umask& operator=(const Umask&) = delete;

 private:
  mode_t old_;
};

}  // namespace

TEST_CASE("privacy: logs are 0600 under umask 022 and 077, children's too", "[recorder][privacy]") {
  for (mode_t mask : {mode_t{022}, mode_t{077}, mode_t{0}}) {
    INFO("umask 0" << std::oct << mask);
    TempDir dir;
    Umask scope(mask);
    // A fork child (BASE.PID) and the programs started by posix_spawn, vfork, fork + exec,
    // system and popen (BASE.PID.exec): every log the recording writes.
    Recording rec = record(dir, "spawn", {HMREC_PROG_SPAWN, "/bin/echo", "100"}, {"--follow-exec"});
    requireRecorded(rec);
    CHECK(modeOf(rec.logPath) == 0600);
    REQUIRE(rec.alsoWrote.size() >= 4);
    for (const std::string& child : rec.alsoWrote) {
      INFO(child);
      CHECK(modeOf(child) == 0600);
    }
  }
}

TEST_CASE("privacy: an existing world-readable file given to -o is 0600 after recording",
          "[recorder][privacy]") {
  TempDir dir;
  const std::string path = dir.file("existing.hml");
  {
    std::ofstream(path) << "an older file\n";
  }
  REQUIRE(chmod(path.c_str(), 0644) == 0);
  Recording rec = recordTo(dir, "existing", path, {HMREC_PROG_ALLOCS, "10"});
  requireRecorded(rec);
  CHECK(readLog(path).complete);
  CHECK(modeOf(path) == 0600);
}
