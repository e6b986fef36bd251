// Custom events and frame marks: the log holds exactly the calls rec_events made between its
// markers, in the same order (sequence numbers), with the same names, payload bytes and threads,
// and frame marks numbered 1, 2, 3, ... across the process.
#include "recorder_support.h"

namespace {

using namespace hmrec;

struct ExpectedMark {
  char kind;  // 'e' event, 'd' event with data, 'f' frame
  int thread = 0;
  std::string name;
  std::vector<uint8_t> payload;
  uint64_t frame = 0;
};

std::vector<uint8_t> fromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  if (hex == "-") return out;
  REQUIRE(hex.size() % 2 == 0);
  for (size_t i = 0; i < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<ExpectedMark> parseEvents(const std::string& out) {
  std::vector<ExpectedMark> marks;
  for (const std::string& l : lines(out)) {
    std::vector<std::string> f = fields(l);
    INFO("rec_events line: " << l.substr(0, 200));
    REQUIRE(f.size() >= 3);
    ExpectedMark m{f[0][0]};
    m.thread = static_cast<int>(number(f[1]));
    if (f[0] == "event") {
      REQUIRE(f.size() == 3);
      m.name = f[2];
    } else if (f[0] == "data") {
      REQUIRE(f.size() == 4);
      m.name = f[2];
      m.payload = fromHex(f[3]);
    } else {
      REQUIRE(f[0] == "frame");
      REQUIRE(f.size() == 3);
      m.frame = number(f[2]);
    }
    marks.push_back(std::move(m));
  }
  return marks;
}

}  // namespace

TEST_CASE("custom events and frame marks: order names payloads threads and frame numbers",
          "[recorder][events]") {
  TempDir dir;
  Recording rec = record(dir, "events", {HMREC_PROG_EVENTS});
  requireRecorded(rec);
  CHECK(rec.programErr.empty());
  std::vector<ExpectedMark> want = parseEvents(rec.result.out);
  uint64_t frames = 0, withData = 0, largest = 0;
  for (const ExpectedMark& m : want) {
    if (m.kind == 'f') ++frames;
    if (m.kind == 'd') ++withData, largest = std::max<uint64_t>(largest, m.payload.size());
  }
  REQUIRE(frames == 55);    // 50 + 4 from the helper thread + 1 at the end
  REQUIRE(withData == 90);  // 50 payloads, 20 pings, 20 pongs
  REQUIRE(largest == 16384);

  Log log = readLog(rec.logPath);
  CHECK(log.complete);
  std::vector<Window> ws = windows(log);
  REQUIRE(ws.size() == 1);
  const uint32_t mainThread = ws[0].thread;
  CHECK(mainThread == 0);

  std::vector<const Record*> got;
  for (size_t i = ws[0].begin + 1; i < ws[0].end; ++i) {
    const Record& r = log.records[i];
    if (std::holds_alternative<CustomEvent>(r) || std::holds_alternative<FrameMark>(r))
      got.push_back(&r);
  }
  REQUIRE(got.size() == want.size());

  std::optional<uint32_t> helperThread;
  uint64_t lastSeq = eventOf(log.records[ws[0].begin])->seq;
  for (size_t k = 0; k < want.size(); ++k) {
    const ExpectedMark& m = want[k];
    const Record& r = *got[k];
    INFO("mark " << k << ": log has " << describe(r) << "; program made " << m.kind
                 << " on its thread " << m.thread << " name '" << m.name << "' payload "
                 << m.payload.size() << " bytes, frame " << m.frame);
    const EventCommon ev = *eventOf(r);
    CHECK(ev.seq > lastSeq);
    lastSeq = ev.seq;
    if (m.thread == 0) {
      CHECK(ev.thread == mainThread);
    } else {
      if (!helperThread) helperThread = ev.thread;
      CHECK(ev.thread == *helperThread);
      CHECK(ev.thread != mainThread);
    }
    if (m.kind == 'f') {
      const auto* f = std::get_if<FrameMark>(&r);
      REQUIRE(f);
      CHECK(f->frame == m.frame);
    } else {
      const auto* e = std::get_if<CustomEvent>(&r);
      REQUIRE(e);
      CHECK(eventName(log, *e) == m.name);
      CHECK(e->payload.size() == m.payload.size());
      CHECK((e->payload == m.payload));
    }
  }
  CHECK(eventOf(log.records[ws[0].end])->seq > lastSeq);

  // Frame marks of the whole log: 1..K in order (only the program marks frames).
  std::vector<uint64_t> allFrames;
  for (const Record& r : log.records)
    if (const auto* f = std::get_if<FrameMark>(&r)) allFrames.push_back(f->frame);
  std::vector<uint64_t> oneToK(frames);
  for (uint64_t i = 0; i < frames; ++i) oneToK[i] = i + 1;
  CHECK(allFrames == oneToK);

  // The summary counts the events by name.
  LogSummary s = summarizeLog(rec.logPath);
  CHECK(s.customEvents["tick"] == 50);
  CHECK(s.customEvents["ping"] == 20);
  CHECK(s.customEvents["pong"] == 20);
  CHECK(s.customEvents["level_end#5"] == 1);
  CHECK(s.records[Record(FrameMark{}).index()] == frames);
}
