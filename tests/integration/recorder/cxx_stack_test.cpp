// Stacks through libstdc++, which Debian builds without frame pointers: operator new calls malloc
// without a frame of its own, so a frame-pointer walk from malloc skips the function that called
// `new` and still ends in libc's start code (a whole-looking chain). The recorder knows
// libstdc++'s code as frameless (its .eh_frame_hdr's function starts lack the frame-pointer
// prologue) and unwinds such stacks with libunwind: every allocation of rec_cxxnew (new,
// std::string growth, std::vector growth) carries the allocating function, then its caller run().
#include <unistd.h>

#include <sstream>

#include "recorder_support.h"

namespace {

using namespace hmrec;

constexpr uint64_t kFnSpan = 1024;  // rec_cxxnew aligns its functions to this

struct CxxRun {
  std::map<std::string, uint64_t> fn;
  Log log;
  std::map<std::string, std::vector<const Alloc*>> allocs;  // phase ("new"...) -> allocations
};

CxxRun recordCxx(const TempDir& dir, const std::vector<std::string>& options) {
  CxxRun c;
  Recording rec = record(dir, "cxxnew", {HMREC_PROG_CXXNEW}, options);
  requireRecorded(rec);
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    INFO("rec_cxxnew line: " << l);
    REQUIRE(f.size() == 3);
    REQUIRE(f[0] == "fn");
    c.fn[f[1]] = number(f[2]);
  }
  REQUIRE(c.fn.size() == 4);
  c.log = readLog(rec.logPath);
  std::vector<Window> ws = windows(c.log);
  REQUIRE(ws.size() == 1);
  std::string phase;
  for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i) {
    std::optional<EventCommon> ev = eventOf(c.log.records[i]);
    if (!ev || ev->thread != ws[0].thread) continue;
    if (const auto* e = std::get_if<CustomEvent>(&c.log.records[i]))
      phase = eventName(c.log, *e);
    else if (const auto* a = std::get_if<Alloc>(&c.log.records[i])) {
      INFO("allocation " << describe(c.log.records[i]));
      REQUIRE(!phase.empty());
      c.allocs[phase].push_back(a);
    }
  }
  return c;
}

bool inside(const CxxRun& c, uint64_t frame, const std::string& fn) {
  uint64_t start = c.fn.at(fn);
  return frame >= start && frame < start + kFnSpan;
}

std::string describeStack(const CxxRun& c, const std::vector<uint64_t>& frames) {
  std::ostringstream o;
  for (uint64_t f : frames) {
    o << "\n  ";
    bool named = false;
    for (const auto& [name, start] : c.fn)
      if (inside(c, f, name)) {
        o << name << "+0x" << std::hex << f - start << std::dec;
        named = true;
      }
    if (!named) o << "0x" << std::hex << f << std::dec;
  }
  return o.str();
}

// The frames leaf first: some outside the program (libstdc++'s, maybe a template instance),
// then one inside `fn`, right after it one inside run().
void requireCaller(const CxxRun& c, const std::vector<uint64_t>& frames, const std::string& fn) {
  INFO("stack, leaf first:" << describeStack(c, frames));
  size_t p = 0;
  while (p < frames.size() && !inside(c, frames[p], fn)) {
    for (const auto& [name, start] : c.fn) {
      INFO("frame " << p << " is in " << name << " before any frame in " << fn);
      CHECK(!inside(c, frames[p], name));
    }
    ++p;
  }
  REQUIRE(p < frames.size());
  REQUIRE(p + 1 < frames.size());
  CHECK(inside(c, frames[p + 1], "run"));
}

}  // namespace

TEST_CASE("backtraces: allocations through libstdc++ keep their calling function",
          "[recorder][backtrace]") {
  for (std::string mode : {"auto", "dwarf"}) {
    INFO("--unwind " << mode);
    TempDir dir;
    CxxRun c = recordCxx(dir, {"--unwind", mode});
    const std::map<std::string, std::pair<std::string, size_t>> phases{
        {"new", {"make_new", 3}},          // three `new Widget`
        {"string", {"grow_string", 5}},    // 2000 chars: at least 5 doublings past the SSO buffer
        {"vector", {"grow_vector", 10}}};  // 2000 ints: 1, 2, 4, ... 2048
    for (const auto& [phase, want] : phases) {
      INFO("phase " << phase << ", allocating function " << want.first);
      const std::vector<const Alloc*>& allocs = c.allocs[phase];
      if (phase == "new")
        CHECK(allocs.size() == want.second);
      else
        CHECK(allocs.size() >= want.second);
      for (const Alloc* a : allocs) {
        INFO("allocation of " << a->size << " bytes");
        REQUIRE(a->stackId != 0);
        requireCaller(c, stackFrames(c.log, a->stackId), want.first);
      }
    }
  }
}

// The sample game allocates mostly through new, std::string and std::vector: at its second level
// end the function charged with the most live bytes is one of the game's, not operator new.
// samples/native_game of the same build tree (heaprec's is BUILD/recorder/heaprec); skipped when
// it is not built (recorder_tests does not depend on it).
TEST_CASE("backtraces: native_game's blame does not stop at operator new",
          "[recorder][backtrace]") {
  std::string game = HMREC_HEAPREC;
  game = game.substr(0, game.rfind('/'));
  game = game.substr(0, game.rfind('/') + 1) + "samples/native_game";
  if (access(game.c_str(), X_OK) != 0) {
    WARN("not built: " << game << " (skipped)");
    return;
  }
  TempDir dir;
  Recording rec = record(dir, "native_game", {game, "3", "200"});
  requireRecorded(rec);
  RunResult blame =
      run(dir, "blame", {HMREC_HEAPMAN, "blame", rec.logPath, "--at", "level_end#2", "--csv", "-"});
  INFO("heapman blame:\n" << blame.out << blame.err);
  REQUIRE(blame.status == 0);
  std::vector<std::string> rows = lines(blame.out);
  REQUIRE(rows.size() >= 2);  // header, then the top function
  const std::string& top = rows[1];
  CHECK(top.find("operator new") == std::string::npos);
  CHECK(top.find("native_game") != std::string::npos);
}
