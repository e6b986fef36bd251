// Allocation time stamps (ring.h, "Time"): an allocation mostly takes its thread's last reading
// of the time stamp counter instead of its own. rec_times reports CLOCK_MONOTONIC around each of
// its mallocs, in bursts separated by 30 ms sleeps; the log's times (ns since the header's
// CLOCK_MONOTONIC start, kept to the header's resolution) must fall inside those brackets: never
// later than the malloc returned, and, after a sleep, not the reading from before it.
#include "recorder_support.h"

namespace {

using namespace hmrec;

struct Bracket {
  uint64_t before = 0, after = 0;
};

// Every allocation of the window, checked against the program's own brackets. `maxEarlyNs`: how
// much earlier than `before` a time may be (the resolution and the conversion's slack always).
void checkTimes(const std::vector<std::string>& options, uint64_t maxEarlyNs,
                uint64_t* firstOfBurstEarliest) {
  TempDir dir;
  Recording rec = record(dir, "times", {HMREC_PROG_TIMES}, options);
  requireRecorded(rec);
  std::unordered_map<uint64_t, Bracket> want;
  std::vector<uint64_t> order;
  for (const std::string& l : lines(rec.result.out)) {
    std::vector<std::string> f = fields(l);
    REQUIRE(f.size() == 4);
    REQUIRE(f[0] == "alloc");
    want[number(f[1])] = {number(f[2]), number(f[3])};
    order.push_back(number(f[1]));
  }
  REQUIRE(order.size() == 480);

  Log log = readLog(rec.logPath);
  uint64_t resolution = 0;
  for (const auto& [key, value] : log.header.options)
    if (key == "time_resolution_ns") resolution = number(value);
  REQUIRE(resolution == 10000);
  std::vector<Window> ws = windows(log);
  REQUIRE(ws.size() == 1);
  // The tsc-to-ns line is calibrated against CLOCK_MONOTONIC while the program runs: a few
  // microseconds of slack either way.
  const uint64_t slack = 200000;
  std::vector<const Alloc*> got;
  for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i)
    if (const auto* a = std::get_if<Alloc>(&log.records[i]); a && want.count(a->address))
      got.push_back(a);
  REQUIRE(got.size() == order.size());
  uint64_t lastTime = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const Alloc& a = *got[k];
    REQUIRE(a.address == order[k]);  // the program's order
    uint64_t t = log.header.startClockNs + a.ev.timeNs;
    const Bracket& b = want[a.address];
    INFO("allocation " << k << " at 0x" << std::hex << a.address << std::dec << ": log time "
                       << t << ", malloc ran from " << b.before << " to " << b.after);
    CHECK(a.ev.timeNs >= lastTime);  // one thread: times never go back
    lastTime = a.ev.timeNs;
    CHECK(t <= b.after + slack);     // never late
    bool firstOfBurst = k % 40 == 0;
    if (firstOfBurst && firstOfBurstEarliest)
      *firstOfBurstEarliest = std::max(*firstOfBurstEarliest, b.before - std::min(b.before, t));
    CHECK(t + resolution + slack + maxEarlyNs >= b.before);
  }
}

}  // namespace

TEST_CASE("times: an allocation is never stamped late, nor with a reading from before a pause",
          "[recorder][times]") {
  // After each 30 ms sleep the writer has moved its epoch (it runs at least every 8 ms, every
  // millisecond while records come, so even a busy machine lets it run during the sleep): the burst's first allocation reads the
  // clock again. Inside a burst an allocation may take a reading up to 15 allocations old
  // (microseconds). Without the epoch the first would be ~30 ms early.
  uint64_t firstEarly = 0;
  checkTimes({}, 10000000, &firstEarly);
  CHECK(firstEarly < 10000000);
}

TEST_CASE("times: --alloc-time-every 1 stamps every allocation with its own reading",
          "[recorder][times]") {
  checkTimes({"--alloc-time-every", "1"}, 0, nullptr);
}
