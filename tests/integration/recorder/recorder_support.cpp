// Helpers of the recorder integration tests (recorder_support.h).
#include "recorder_support.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <type_traits>

extern char** environ;

namespace hmrec {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/heapman-rec-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back(0);
  REQUIRE(::mkdtemp(buf.data()) != nullptr);
  path_ = buf.data();
}

TempDir::~TempDir() {
  if (std::getenv("HEAPMAN_KEEP_TEST_FILES")) {
    std::cerr << "recorder_tests: kept " << path_ << "\n";
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

RunResult run(const TempDir& dir, const std::string& name, const std::vector<std::string>& argv) {
  REQUIRE(!argv.empty());
  const std::string outPath = dir.file(name + ".out"), errPath = dir.file(name + ".err");
  posix_spawn_file_actions_t fa;
  REQUIRE(posix_spawn_file_actions_init(&fa) == 0);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  INFO("posix_spawn " << argv[0] << ": " << std::strerror(rc));
  REQUIRE(rc == 0);
  int status = 0;
  pid_t w;
  do w = ::waitpid(pid, &status, 0);
  while (w < 0 && errno == EINTR);
  REQUIRE(w == pid);

  RunResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(status))
    r.status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.status = 128 + (r.signal = WTERMSIG(status));
  r.out = readFile(outPath);
  r.err = readFile(errPath);
  return r;
}

std::string Recording::describe() const {
  std::ostringstream o;
  o << "heaprec exit status " << result.status << " after " << result.seconds << " s, log "
    << logPath << "\n--- stderr ---\n"
    << result.err.substr(0, 4000) << "\n--- stdout (first 2000 bytes) ---\n"
    << result.out.substr(0, 2000);
  return o.str();
}

Recording record(const TempDir& dir, const std::string& name, const std::vector<std::string>& prog,
                 const std::vector<std::string>& options) {
  return recordTo(dir, name, dir.file(name + ".hml"), prog, options);
}

Recording recordTo(const TempDir& dir, const std::string& name, const std::string& logPath,
                   const std::vector<std::string>& prog, const std::vector<std::string>& options) {
  Recording rec;
  rec.logPath = logPath;
  std::vector<std::string> argv = {HMREC_HEAPREC, "run", "-o", rec.logPath};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), prog.begin(), prog.end());
  rec.result = run(dir, name, argv);

  // heaprec's report is the last line of stderr.
  const std::string& err = rec.result.err;
  size_t end = err.size();
  if (end && err[end - 1] == '\n') --end;
  size_t newline = end ? err.rfind('\n', end - 1) : std::string::npos;
  size_t start = newline == std::string::npos ? 0 : newline + 1;
  std::string last = err.substr(start, end - start);
  // "(N events)", or "(N events; the program was killed by SIGX after the log was finished)".
  static const std::regex wrote(R"(^heaprec: wrote (.+) \(([0-9]+) events(; [^)]*)?\)$)");
  std::smatch m;
  if (std::regex_match(last, m, wrote)) {
    rec.hasWroteLine = true;
    rec.wroteFile = m[1];
    rec.wroteEvents = std::stoull(m[2]);
    // The other processes' logs are listed on the lines before, one each.
    static const std::regex also(R"(^heaprec: also wrote (.+) \(.*\)$)");
    while (start > 0) {
      size_t prev = start - 1 > 0 ? err.rfind('\n', start - 2) : std::string::npos;
      size_t from = prev == std::string::npos ? 0 : prev + 1;
      std::string line = err.substr(from, start - 1 - from);
      if (!std::regex_match(line, m, also)) break;
      static const std::regex more(R"(^[0-9]+ more logs of other processes$)");
      if (!std::regex_match(m[1].str(), more)) rec.alsoWrote.insert(rec.alsoWrote.begin(), m[1]);
      start = from;
    }
    rec.programErr = err.substr(0, start);
  } else {
    rec.programErr = err;
  }
  return rec;
}

void requireRecorded(const Recording& r, int expectedStatus) {
  INFO(r.describe());
  REQUIRE(r.result.status == expectedStatus);
  REQUIRE(r.hasWroteLine);
  CHECK(r.wroteFile == r.logPath);
  // Only the one report line: nothing else from heaprec on stderr.
  for (const std::string& l : lines(r.programErr)) CHECK(l.rfind("heaprec", 0) != 0);
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (!value) return;
  if (const char* was = ::getenv(name)) before_ = was;
  ::setenv(name, value, 1);
  set_ = true;
}

ScopedEnv::~ScopedEnv() {
  if (!set_) return;
  if (before_)
    ::setenv(name_.c_str(), before_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

Recording recordWithStats(const TempDir& dir, const std::string& name,
                          const std::vector<std::string>& prog,
                          const std::vector<std::string>& options) {
  Recording rec;
  {
    ScopedEnv stats("HEAPMAN_STATS", "1");
    rec = record(dir, name, prog, options);
  }
  INFO(rec.describe());
  REQUIRE(rec.result.status == 0);
  REQUIRE(rec.hasWroteLine);
  return rec;
}

std::optional<EventCommon> eventOf(const Record& r) {
  return std::visit(
      [](const auto& x) -> std::optional<EventCommon> {
        if constexpr (requires { x.ev; })
          return x.ev;
        else
          return std::nullopt;
      },
      r);
}

Log readLog(const std::string& path) {
  Log log;
  INFO("log " << path);
  std::optional<LogReader> reader;
  try {
    reader.emplace(LogReader::open(path));
  } catch (const FormatError& e) {
    FAIL("cannot open the log: [" << errorCodeName(e.code()) << "] " << e.what());
  }
  log.header = reader->header();
  log.complete = reader->end().complete;
  uint64_t undefinedNames = 0, redefinitions = 0, undefinedStacks = 0;
  try {
    reader->forEachRecord([&](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, LogString>) {
        auto [it, added] = log.strings.emplace(x.id, x.text);
        if (!added && it->second != x.text) ++redefinitions;
      }
      if constexpr (std::is_same_v<T, StackNode>) {
        auto [it, added] = log.nodes.emplace(x.id, x);
        if (!added && !(it->second == x)) ++redefinitions;
      }
      if constexpr (std::is_same_v<T, CustomEvent>)
        if (!log.strings.count(x.nameId)) ++undefinedNames;
      if constexpr (requires { x.stackId; })
        if (x.stackId != 0 && !log.nodes.count(x.stackId)) ++undefinedStacks;
      log.records.emplace_back(x);
    });
  } catch (const FormatError& e) {
    FAIL("cannot decode the log: [" << errorCodeName(e.code()) << "] " << e.what());
  }
  {
    INFO("custom events whose name was not defined before them");
    CHECK(undefinedNames == 0);
  }
  {
    INFO("allocations whose stack id was not defined (StackNode) before them");
    CHECK(undefinedStacks == 0);
  }
  {
    INFO("string or stack node ids defined twice with different contents");
    CHECK(redefinitions == 0);
  }
  return log;
}

LogSummary summarizeLog(const std::string& path) {
  INFO("log " << path);
  try {
    return summarize(LogReader::open(path));
  } catch (const FormatError& e) {
    FAIL("summarize() failed: [" << errorCodeName(e.code()) << "] chunk " << e.chunk() << " offset "
                                 << e.offset() << ": " << e.what());
  }
  return {};
}

uint32_t lastGcNumber(const std::string& path) {
  uint32_t last = 0;
  LogReader::open(path).forEachRecord([&](const auto& r) {
    if constexpr (std::is_same_v<std::decay_t<decltype(r)>, GcEnd>) last = r.gcNumber;
  });
  return last;
}

Dump readDump(const std::string& path, uint32_t gc) {
  Dump d;
  LogReader reader = LogReader::open(path);
  for (const ChunkRef& c : reader.chunks()) {
    if (c.header.type != static_cast<uint16_t>(ChunkType::kRamDump)) continue;
    reader.forEachSegment(c, [&](const RamSegment& s) {
      if (s.hasBytes) d.byHash.emplace(s.hash, s.bytes);
      if (s.gcNumber != gc) return;
      if (s.kind == SegmentKind::kObject) {
        d.objectIndex[s.address] = d.segments.size();
        d.storedObjectSegments += s.hasBytes;
      }
      d.segments.push_back(s);
      d.segments.back().bytes.clear();
    });
  }
  return d;
}

std::optional<std::vector<uint8_t>> Dump::read(uint64_t address, uint64_t n) const {
  std::vector<uint8_t> out;
  while (out.size() < n) {
    uint64_t at = address + out.size();
    auto it = objectIndex.upper_bound(at);
    if (it == objectIndex.begin()) return std::nullopt;
    const RamSegment& s = segments[std::prev(it)->second];
    if (at >= s.address + s.length) return std::nullopt;
    auto bytes = byHash.find(s.hash);
    if (bytes == byHash.end() || bytes->second.size() != s.length) return std::nullopt;
    uint64_t take = std::min(n - out.size(), s.address + s.length - at);
    const uint8_t* p = bytes->second.data() + (at - s.address);
    out.insert(out.end(), p, p + take);
  }
  return out;
}

std::string eventName(const Log& log, const CustomEvent& e) {
  auto it = log.strings.find(e.nameId);
  INFO("custom event seq " << e.ev.seq << " names string " << e.nameId);
  REQUIRE(it != log.strings.end());
  return it->second;
}

uint64_t allocsAfterBegin(const Log& log) {
  std::optional<uint32_t> thread;
  uint64_t n = 0;
  for (const Record& r : log.records) {
    if (const auto* e = std::get_if<CustomEvent>(&r); e && !thread && eventName(log, *e) == "begin")
      thread = e->ev.thread;
    if (const auto* a = std::get_if<Alloc>(&r); a && thread && a->ev.thread == *thread && a->size == 64)
      ++n;
  }
  return n;
}

std::vector<Window> windows(const Log& log, const std::string& beginName,
                            const std::string& endName) {
  std::vector<Window> out;
  std::map<uint32_t, size_t> open;  // thread -> index in out
  for (size_t i = 0; i < log.records.size(); ++i) {
    const auto* e = std::get_if<CustomEvent>(&log.records[i]);
    if (!e) continue;
    auto nameIt = log.strings.find(e->nameId);
    if (nameIt == log.strings.end()) continue;
    if (nameIt->second == beginName) {
      INFO("second '" << beginName << "' on thread " << e->ev.thread << " before its '" << endName
                      << "'");
      REQUIRE(!open.count(e->ev.thread));
      open[e->ev.thread] = out.size();
      out.push_back(Window{i, 0, e->ev.thread});
    } else if (nameIt->second == endName) {
      auto it = open.find(e->ev.thread);
      INFO("'" << endName << "' on thread " << e->ev.thread << " without '" << beginName << "'");
      REQUIRE(it != open.end());
      out[it->second].end = i;
      open.erase(it);
    }
  }
  INFO("threads whose '" << beginName << "' has no '" << endName << "'");
  REQUIRE(open.empty());
  return out;
}

std::vector<uint64_t> stackFrames(const Log& log, uint32_t stackId) {
  std::vector<uint64_t> frames;
  uint32_t id = stackId;
  while (id != 0) {
    auto it = log.nodes.find(id);
    INFO("stack " << stackId << " names node " << id << ", which the log does not define");
    REQUIRE(it != log.nodes.end());
    CHECK(!it->second.managed);
    frames.push_back(it->second.frame);
    INFO("stack " << stackId << " has a cycle or is absurdly deep");
    REQUIRE(frames.size() < 100000);
    id = it->second.parent;
  }
  return frames;
}

void HeapTracker::alloc(const EventCommon& ev, uint64_t address) {
  auto [it, added] = live.emplace(address, Block{ev.thread});
  if (!added) {
    if (++allocOfLive <= 3) {
      std::ostringstream o;
      o << " [seq " << ev.seq << " thread " << ev.thread << " allocates 0x" << std::hex << address
        << std::dec << ", live since an allocation on thread " << it->second.thread << "]";
      examples += o.str();
    }
    it->second.thread = ev.thread;
  }
  auto f = freedBy.find(address);
  if (f != freedBy.end() && f->second != ev.thread) ++crossThreadReuse;
}

std::optional<uint32_t> HeapTracker::free(const EventCommon& ev, uint64_t address) {
  freedBy[address] = ev.thread;
  auto it = live.find(address);
  if (it == live.end()) return std::nullopt;
  uint32_t thread = it->second.thread;
  live.erase(it);
  return thread;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

uint64_t number(const std::string& s) {
  INFO("number '" << s << "'");
  REQUIRE(!s.empty());
  char* end = nullptr;
  uint64_t v = std::strtoull(s.c_str(), &end, 0);
  REQUIRE(*end == 0);
  return v;
}

std::string describe(const Record& r) {
  std::ostringstream o;
  o << recordKindName(r.index());
  std::visit(
      [&](const auto& x) {
        if constexpr (requires { x.ev; }) o << " seq=" << x.ev.seq << " thread=" << x.ev.thread;
        if constexpr (requires { x.address; })
          o << std::hex << " address=0x" << x.address << std::dec;
        if constexpr (requires { x.oldAddress; })
          o << std::hex << " old=0x" << x.oldAddress << " new=0x" << x.newAddress << std::dec;
        if constexpr (requires { x.size; }) o << " size=" << x.size;
        if constexpr (requires { x.actualSize; }) o << " actual=" << x.actualSize;
        if constexpr (requires { x.stackId; }) o << " stack=" << x.stackId;
        if constexpr (requires { x.nameId; })
          o << " name=" << x.nameId << " payload=" << x.payload.size();
        if constexpr (requires { x.frame; }) o << " frame=" << x.frame;
      },
      r);
  return o.str();
}

}  // namespace hmrec
