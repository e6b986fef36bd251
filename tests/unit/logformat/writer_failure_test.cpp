// A failing sink turns the writer off: ok() false, error() set, nothing more written, no crash.
#include <fcntl.h>
#include <unistd.h>

#include "test_support.h"

using namespace hmtest;

namespace {

// Accepts `limit` bytes in all; the write that would pass the limit stores what fits and fails.
class FailingSink : public Sink {
 public:
  explicit FailingSink(size_t limit, std::string why = "injected failure")
      : limit_(limit), why_(std::move(why)) {}
  bool write(const void* data, size_t n) override {
    ++calls;
    auto* p = static_cast<const uint8_t*>(data);
    if (failed || bytes.size() + n > limit_) {
      size_t fits = failed ? 0 : limit_ - bytes.size();
      bytes.insert(bytes.end(), p, p + fits);
      failed = true;
      return false;
    }
    bytes.insert(bytes.end(), p, p + n);
    return true;
  }
  std::string error() const override { return why_; }

  Bytes bytes;
  size_t calls = 0;
  bool failed = false;

 private:
  size_t limit_;
  std::string why_;
};

void writeEverything(LogWriter& w, const std::vector<Record>& recs) {
  for (size_t i = 0; i < recs.size(); ++i) {
    w.write(recs[i]);
    if (i % 97 == 0) w.write(RamSegment{SegmentKind::kObject, 1, 0x1000 + i, 64, 0, true, noise(64, i)});
  }
  w.flush();
  w.writeRawChunk(77, Bytes(10, 1), 0, 0);
  w.finish();
}

}  // namespace

TEST_CASE("a sink that fails after N bytes stops the writer", "[writer]") {
  WriterOptions o;
  o.recordsChunkBytes = 512;
  o.ramChunkBytes = 512;
  const std::vector<Record> recs = churn(3, 400);
  MemorySink good;
  {
    LogWriter w(good, testHeader(), o);
    writeEverything(w, recs);
    REQUIRE(w.ok());
  }
  const Bytes& full = good.bytes;
  const uint64_t headerEnd = firstChunkOffset(full);
  for (size_t limit = 0; limit < full.size(); limit += (limit < 64 ? 1 : 53)) {
    INFO("limit " << limit << " of " << full.size());
    FailingSink sink(limit);
    LogWriter w(sink, testHeader(), o);
    writeEverything(w, recs);
    CHECK_FALSE(w.ok());
    CHECK(w.error() == "injected failure");
    CHECK(sink.failed);
    // What reached the sink is a prefix of the good log, cut at the limit; bytesWritten()
    // counts the writes that succeeded.
    REQUIRE(sink.bytes.size() == limit);
    CHECK(std::equal(sink.bytes.begin(), sink.bytes.end(), full.begin()));
    CHECK(w.bytesWritten() <= limit);
    // After the failure the writer calls the sink no more.
    const size_t calls = sink.calls;
    w.write(Alloc{ev(1'000'000), HeapKind::kNative, 0x10, 1, 1, 0, 0});
    w.write(RamSegment{SegmentKind::kObject, 9, 0x10, 4, 0, true, {1, 2, 3, 4}});
    w.flush();
    w.writeRawChunk(77, Bytes(3, 0), 0, 0);
    w.finish();
    CHECK(sink.calls == calls);
    CHECK(sink.bytes.size() == limit);
    CHECK_FALSE(w.ok());
    CHECK(w.error() == "injected failure");  // the first reason is kept
    // A cut past the header still reads as a truncated log.
    if (limit >= headerEnd) {
      LogReader r = LogReader::fromBytes(sink.bytes);
      CHECK_FALSE(r.end().complete);
      CHECK_NOTHROW(summarize(r));
    }
  }
}

TEST_CASE("a sink failing without a reason gives a generic error", "[writer]") {
  FailingSink sink(30, "");
  LogWriter w(sink, testHeader());
  CHECK_FALSE(w.ok());
  CHECK(w.error() == "write failed");
  CHECK(w.bytesWritten() == kPrefixSize);
  CHECK(sink.calls == 2);  // prefix, then the header that failed
}

TEST_CASE("writing to /dev/full fails with ENOSPC and stops", "[writer]") {
  int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  FdSink sink(fd);
  LogWriter w(sink, testHeader());
  CHECK_FALSE(w.ok());
  CHECK_THAT(w.error(), Catch::Contains("No space"));
  CHECK(w.bytesWritten() == 0);
  const std::string first = w.error();
  for (const Record& r : churn(5, 200)) w.write(r);
  w.write(RamSegment{SegmentKind::kObject, 1, 0x10, 4, 0, true, {1, 2, 3, 4}});
  w.flush();
  w.finish();
  CHECK_FALSE(w.ok());
  CHECK(w.error() == first);
  CHECK(w.bytesWritten() == 0);
  ::close(fd);
}

TEST_CASE("FdSink writes everything to a pipe", "[writer]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  Bytes expected = writeLog(testHeader(), {}, [](LogWriter& w) {
    w.write(FrameMark{ev(0), 1});
  });
  {
    FdSink sink(fds[1]);
    LogWriter w(sink, testHeader());
    w.write(FrameMark{ev(0), 1});
    w.finish();
    CHECK(w.ok());
    CHECK(sink.error().empty());
  }
  ::close(fds[1]);
  Bytes got(expected.size() + 10);
  size_t n = 0;
  for (ssize_t k; (k = ::read(fds[0], got.data() + n, got.size() - n)) > 0;) n += static_cast<size_t>(k);
  ::close(fds[0]);
  got.resize(n);
  CHECK(got == expected);
}

// writer.h: no record may follow finish(); one that does must not touch the finished log.
TEST_CASE("records written after finish() leave the finished log intact", "[writer]") {
  MemorySink sink;
  WriterOptions o;
  o.recordsChunkBytes = 256;
  o.ramChunkBytes = 256;
  LogWriter w(sink, testHeader(), o);
  w.write(FrameMark{ev(0), 1});
  w.finish();
  const Bytes finished = sink.bytes;
  for (uint64_t i = 1; i < 100; ++i) w.write(FrameMark{ev(i), i});
  w.write(RamSegment{SegmentKind::kObject, 1, 0x10, 300, 0, true, noise(300, 1)});
  w.flush();
  w.finish();
  CHECK(sink.bytes.size() == finished.size());
  auto err = formatErrorOf([&] { readAndSummarize(sink.bytes); });
  if (err) UNSCOPED_INFO(describe(*err));
  CHECK_FALSE(err.has_value());
}
