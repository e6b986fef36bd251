// The recorded program's stdout, stderr, arguments, environment and exit status are the same as
// in a plain run; heaprec adds only its one report line at the end of stderr.
#include <csignal>
#include <cstdlib>
#include <sstream>

#include "recorder_support.h"

namespace {

using namespace hmrec;

// Offset of the first difference, for messages (the outputs are 64 KiB+).
std::string firstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size() && i == b.size()) return "identical";
  std::ostringstream o;
  o << "sizes " << a.size() << " and " << b.size() << ", first difference at byte " << i << ": ["
    << a.substr(i, 80) << "] vs [" << b.substr(i, 80) << "]";
  return o.str();
}

void requireSameOutput(const RunResult& plain, const Recording& rec) {
  INFO("stdout: " << firstDifference(plain.out, rec.result.out));
  CHECK(plain.out == rec.result.out);
  INFO("stderr (without heaprec's line): " << firstDifference(plain.err, rec.programErr));
  CHECK(plain.err == rec.programErr);
}

const std::vector<std::string> kArgs = {"two words",         "",        "--", "-o", "x*y",
                                        "\xc3\xbcn\xc3\xaf", "--depth", "3"};

std::vector<std::string> outputCommand(const std::string& mode, int code) {
  std::vector<std::string> argv = {HMREC_PROG_OUTPUT, mode, std::to_string(code)};
  argv.insert(argv.end(), kArgs.begin(), kArgs.end());
  return argv;
}

}  // namespace

TEST_CASE("output: stdout stderr arguments environment and exit status 7 unchanged",
          "[recorder][output]") {
  ScopedEnv echo("HEAPMAN_TEST_ECHO", "echo value with spaces");
  TempDir dir;
  RunResult plain = run(dir, "plain", outputCommand("exit", 7));
  REQUIRE(plain.status == 7);
  REQUIRE(plain.out.find("echo [echo value with spaces]") != std::string::npos);
  REQUIRE(plain.out.find("arg 5 [--]") != std::string::npos);
  REQUIRE(plain.out.size() > 65536);

  Recording rec = record(dir, "recorded", outputCommand("exit", 7));
  requireRecorded(rec, 7);
  requireSameOutput(plain, rec);
  // heaprec's line is the only addition, and it is the last line.
  CHECK(rec.result.err.size() > plain.err.size());
  CHECK(rec.result.err.compare(0, plain.err.size(), plain.err) == 0);

  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  uint64_t outputs = 0, frames = 0;
  for (const Record& r : log.records) {
    if (const auto* e = std::get_if<CustomEvent>(&r)) outputs += eventName(log, *e) == "output";
    if (const auto* f = std::get_if<FrameMark>(&r)) frames += f->frame == 1;
  }
  CHECK(outputs == 1);
  CHECK(frames == 1);
  LogSummary s = summarizeLog(rec.logPath);
  CHECK(s.events == rec.wroteEvents);
  CHECK(s.heaps[0].allocs > 0);  // at least the program's 64 KiB buffer
  CHECK(log.header.pid != 0);
}

TEST_CASE("output: exit statuses 0 and 255 pass through", "[recorder][output]") {
  for (int code : {0, 255}) {
    INFO("exit status " << code);
    TempDir dir;
    RunResult plain = run(dir, "plain", outputCommand("exit", code));
    REQUIRE(plain.status == code);
    Recording rec = record(dir, "recorded", outputCommand("exit", code));
    requireRecorded(rec, code);
    requireSameOutput(plain, rec);
  }
}

TEST_CASE("output: a program killed by a signal gives 128 + signal", "[recorder][output]") {
  for (int sig : {SIGTERM, SIGKILL}) {
    INFO("signal " << sig);
    TempDir dir;
    RunResult plain = run(dir, "plain", outputCommand("signal", sig));
    REQUIRE(plain.status == 128 + sig);
    Recording rec = record(dir, "recorded", outputCommand("signal", sig));
    INFO(rec.describe());
    CHECK(rec.result.status == 128 + sig);
    INFO("stdout: " << firstDifference(plain.out, rec.result.out));
    CHECK(plain.out == rec.result.out);
    // heaprec may report a killed program differently (or not at all), but on one line at most,
    // after the program's own output.
    std::string err = rec.result.err;
    if (err.size() > plain.err.size() && err.compare(0, plain.err.size(), plain.err) == 0) {
      std::vector<std::string> extra = lines(err.substr(plain.err.size()));
      CHECK(extra.size() == 1);
      for (const std::string& l : extra) CHECK(l.rfind("heaprec: ", 0) == 0);
    } else {
      INFO("stderr: " << firstDifference(plain.err, err));
      CHECK(err == plain.err);
    }
  }
}
