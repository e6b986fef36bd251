// Helpers of the recorder integration tests: running programs with and without `heaprec run`
// (stdout/stderr captured to files, exit status), reading the log, finding the records between a
// program's heapman_event("begin") / heapman_event("end") markers, and walking stacks.
//
// The paths of heaprec, the heapman CLI and the test programs come from CMake as compile
// definitions (HMREC_*).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/records.h"
#include "heapman/logformat/summary.h"

namespace hmrec {

using namespace heapman::log;

// A fresh directory under $TMPDIR (or /tmp), removed with its contents unless the environment
// sets HEAPMAN_KEEP_TEST_FILES (then its path is printed).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Sets an environment variable (`value` nullptr: leaves it as it is) for the scope's length, and
// puts back what it was, also when a REQUIRE leaves the scope early.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> before_;
  bool set_ = false;
};

struct RunResult {
  int status = -1;  // exit status, or 128 + signal number when killed by a signal
  int signal = 0;   // the signal that killed it, 0 when it exited
  std::string out, err;
  double seconds = 0;
};

// Runs argv (argv[0] a path) with stdin from /dev/null and stdout/stderr in DIR/NAME.out and
// DIR/NAME.err, waits, and returns the status and both outputs.
RunResult run(const TempDir& dir, const std::string& name, const std::vector<std::string>& argv);

// `heaprec run -o LOG OPTIONS... -- PROG ARGS...`, LOG = DIR/NAME.hml.
struct Recording {
  RunResult result;
  std::string logPath;
  std::string programErr;  // stderr without heaprec's report (its last lines)
  bool hasWroteLine = false;
  // "heaprec: also wrote FILE (...)" lines just before the last: other processes' logs.
  std::vector<std::string> alsoWrote;
  std::string wroteFile;         // FILE of "heaprec: wrote FILE (N events)"
  uint64_t wroteEvents = 0;      // N
  std::string describe() const;  // for failure messages
};
Recording record(const TempDir& dir, const std::string& name, const std::vector<std::string>& prog,
                 const std::vector<std::string>& options = {});
// The same with LOG chosen by the caller (e.g. /dev/full).
Recording recordTo(const TempDir& dir, const std::string& name, const std::string& logPath,
                   const std::vector<std::string>& prog,
                   const std::vector<std::string>& options = {});
// Requires that heaprec ran PROG to the expected exit status and reported its log on one line.
void requireRecorded(const Recording& r, int expectedStatus = 0);
// record() with HEAPMAN_STATS=1 (the recorder's counts, heaprec lines on stderr besides its
// report), required to have run PROG to status 0 and reported its log: requireRecorded but for
// those lines.
Recording recordWithStats(const TempDir& dir, const std::string& name,
                          const std::vector<std::string>& prog,
                          const std::vector<std::string>& options = {});

// Every record of a log, in log order. Checks on the way that each custom event's name was
// defined (LogString) before it and that no string or stack node id is redefined differently.
struct Log {
  Header header;
  std::vector<Record> records;
  std::unordered_map<uint32_t, std::string> strings;  // LogString id -> text
  std::unordered_map<uint32_t, StackNode> nodes;      // stack node id -> node
  bool complete = false;
};
Log readLog(const std::string& path);
// summarize() (the check behind `heapman verify`), failing the test with the error's code.
LogSummary summarizeLog(const std::string& path);
// The number of the last collection that ended in the log (GcEnd), 0 when none did.
uint32_t lastGcNumber(const std::string& path);

// The RAM dump of one collection, its bytes found by address (object segments are runs of live
// objects cut at 4 KiB boundaries; deduplicated ones take the bytes stored under their hash).
struct Dump {
  std::vector<RamSegment> segments;        // the collection's segments, in log order
  std::map<uint64_t, size_t> objectIndex;  // object segment address -> index in segments
  std::map<uint64_t, std::vector<uint8_t>> byHash;
  uint64_t storedObjectSegments = 0;       // object segments whose bytes are stored in them
  // The n bytes at address, nullopt when any is not in the dump.
  std::optional<std::vector<uint8_t>> read(uint64_t address, uint64_t n) const;
};
Dump readDump(const std::string& path, uint32_t gc);


// The event fields of a record, or nullopt for a definition.
std::optional<EventCommon> eventOf(const Record& r);

// A program's "begin".."end" bracket on one thread: the positions (in Log::records) of the two
// marker events, and the recorder thread index they carry.
struct Window {
  size_t begin = 0, end = 0;
  uint32_t thread = 0;
};
// The brackets of all threads, in the order of their begin markers. Requires that every begin has
// a matching end on its thread.
std::vector<Window> windows(const Log& log, const std::string& beginName = "begin",
                            const std::string& endName = "end");

// The name of a CustomEvent (requires the string to be defined).
std::string eventName(const Log& log, const CustomEvent& e);

// The 64-byte allocations after the first "begin" event, on that event's thread (what
// rec_hostile's modes allocate).
uint64_t allocsAfterBegin(const Log& log);

// The frames of a stack, leaf first (StackNode chain from `stackId` to the empty stack 0).
std::vector<uint64_t> stackFrames(const Log& log, uint32_t stackId);

// Follows the native heap through a log across threads, in sequence order: an allocation must
// not return an address the log still holds live (it would if a free were logged after the real
// free, or an allocation before the real malloc returned), and a free should name a live block.
struct HeapTracker {
  struct Block {
    uint32_t thread = 0;  // that allocated it
  };
  std::unordered_map<uint64_t, Block> live;
  std::unordered_map<uint64_t, uint32_t> freedBy;  // address -> thread of its last free
  uint64_t allocOfLive = 0;
  uint64_t crossThreadReuse = 0;  // allocations of an address another thread freed last
  std::string examples;           // the first few allocOfLive cases
  void alloc(const EventCommon& ev, uint64_t address);
  // The allocating thread of the freed block, or nullopt when the log never allocated it.
  std::optional<uint32_t> free(const EventCommon& ev, uint64_t address);
};

// Text helpers: lines without their '\n'; whitespace-separated fields; numbers in any base
// ("0x..." for hex).
std::vector<std::string> lines(const std::string& text);
std::vector<std::string> fields(const std::string& line);
uint64_t number(const std::string& s);

std::string describe(const Record& r);

}  // namespace hmrec
