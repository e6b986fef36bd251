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

#ifdef HMREC_GC_GAME
namespace {

// An answer without the lines that name the log file (the copy has another name).
std::string withoutLogName(const std::string& out, const std::string& path) {
  std::string kept;
  for (const std::string& l : lines(out))
    if (l.find(path) == std::string::npos) kept += l + "\n";
  return kept;
}

uint64_t ramDumpChunks(const std::string& path) {
  LogReader r = LogReader::open(path);
  uint64_t n = 0;
  for (const ChunkRef& c : r.chunks()) n += c.header.type == static_cast<uint16_t>(ChunkType::kRamDump);
  return n;
}

}  // namespace

// What heapman makes from a log with RAM dumps is private too: the index LOG.hmx (it caches dump
// data), the video's frames, an object's words written to a file.
TEST_CASE("privacy: the index, frames and object files of a log with dumps are 0600",
          "[recorder][privacy]") {
  for (mode_t mask : {mode_t{022}, mode_t{077}}) {
    INFO("umask 0" << std::oct << mask);
    TempDir dir;
    Umask scope(mask);
    Recording rec = record(dir, "game", {HMREC_GC_GAME, "2"}, {"--ram-dumps", "every"});
    requireRecorded(rec);
    RunResult gcs = run(dir, "gcs", {HMREC_HEAPMAN, "gcs", rec.logPath});
    REQUIRE(gcs.status == 0);
    CHECK(modeOf(rec.logPath + ".hmx") == 0600);
    const std::string frames = dir.file("frames");
    RunResult video = run(dir, "video", {HMREC_HEAPMAN, "video", rec.logPath, "--frames-dir", frames,
                                         "--every", "gc", "--size", "256x256"});
    REQUIRE(video.status == 0);
    size_t pictures = 0;
    for (const auto& e : std::filesystem::directory_iterator(frames)) {
      if (e.path().extension() != ".png") continue;  // heap.vtt: event names, no memory
      INFO(e.path());
      CHECK(modeOf(e.path()) == 0600);
      ++pictures;
    }
    CHECK(pictures > 0);
    RunResult objects = run(dir, "objects", {HMREC_HEAPMAN, "objects", rec.logPath, "--at", "gc:2",
                                             "--csv", "-", "--top", "1"});
    REQUIRE(objects.status == 0);
    std::vector<std::string> rows = lines(objects.out);
    REQUIRE(rows.size() >= 2);
    const std::string address = rows[1].substr(0, rows[1].find(','));
    const std::string words = dir.file("object.json");
    RunResult object = run(dir, "object", {HMREC_HEAPMAN, "object", rec.logPath, "--at", "gc:2",
                                           address, "--json", words});
    REQUIRE(object.status == 0);
    CHECK(modeOf(words) == 0600);
  }
}

// heapman strip: the copy to share has no RAM dump chunk, verifies, and answers every query that
// does not read memory as the original does.
TEST_CASE("privacy: strip writes a copy without RAM dumps that answers the same",
          "[recorder][privacy]") {
  TempDir dir;
  Recording rec = record(dir, "game", {HMREC_GC_GAME, "3"}, {"--ram-dumps", "every"});
  requireRecorded(rec);
  REQUIRE(ramDumpChunks(rec.logPath) > 0);
  const std::string copy = dir.file("shared.hml");
  RunResult strip = run(dir, "strip", {HMREC_HEAPMAN, "strip", rec.logPath, "-o", copy});
  INFO(strip.out << strip.err);
  REQUIRE(strip.status == 0);
  CHECK(strip.out.find("RAM dumps left out") != std::string::npos);
  CHECK(ramDumpChunks(copy) == 0);
  RunResult verify = run(dir, "verify", {HMREC_HEAPMAN, "verify", copy});
  CHECK(verify.status == 0);
  CHECK(LogReader::open(copy).header().options ==
        [&] {
          auto options = LogReader::open(rec.logPath).header().options;
          for (auto& [key, value] : options)
            if (key == "ram_dumps") value = "stripped";
          return options;
        }());
  const std::vector<std::vector<std::string>> queries = {
      {"gcs"},
      {"blame", "--at", "level_end#2", "--top", "10"},
      {"diff", "--from", "level_start#2", "--to", "level_end#2", "--table", "functions", "--csv", "-"},
      {"churn"},
      {"types", "--at", "level_end#2"},
      {"events"}};
  for (const auto& q : queries) {
    std::vector<std::string> a = {HMREC_HEAPMAN, q[0], rec.logPath}, b = {HMREC_HEAPMAN, q[0], copy};
    a.insert(a.end(), q.begin() + 1, q.end());
    b.insert(b.end(), q.begin() + 1, q.end());
    RunResult original = run(dir, "original", a), stripped = run(dir, "stripped", b);
    INFO(q[0]);
    CHECK(original.status == 0);
    CHECK(stripped.status == 0);
    CHECK(withoutLogName(stripped.out, copy) == withoutLogName(original.out, rec.logPath));
  }
  // Bad use: no -o, or -o the log itself: exit 2, the log untouched.
  const uint64_t size = std::filesystem::file_size(rec.logPath);
  CHECK(run(dir, "no-o", {HMREC_HEAPMAN, "strip", rec.logPath}).status == 2);
  CHECK(run(dir, "self", {HMREC_HEAPMAN, "strip", rec.logPath, "-o", rec.logPath}).status == 2);
  CHECK(std::filesystem::file_size(rec.logPath) == size);
  CHECK(ramDumpChunks(rec.logPath) > 0);
}
#endif
