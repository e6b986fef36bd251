// A followed log (ReplayOptions::follow, Replay::grow): a replay opened while the log is being
// written takes in each growth by replaying only what was appended, and then answers exactly as
// a replay opened afresh on the log as it then stands.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "test_log.h"

using namespace rtest;
using namespace heapman::replay;
namespace fs = std::filesystem;
using Growth = heapman::log::LogReader::Growth;

namespace {

struct Dir {
  fs::path path;
  Dir() {
    path = fs::temp_directory_path() / ("follow-test-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

ReplayOptions options(bool follow) {
  ReplayOptions o;
  o.checkpointEvents = 300;
  o.indexShare = 0;
  o.notes = nullptr;
  o.useIndex = false;
  o.follow = follow;
  o.intactPrefix = true;
  return o;
}

// Appends bytes [from, to) of `log` to the file (the recorder's writes: same file, same inode).
void append(const fs::path& p, const std::vector<uint8_t>& log, size_t from, size_t to) {
  std::ofstream out(p, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(log.data() + from), static_cast<std::streamsize>(to - from));
  REQUIRE(out.good());
}

// Everything the index pass gathers that a followed log keeps (its churn spans wait for the end).
void requireSameTables(const LogTables& a, const LogTables& b) {
  REQUIRE(a.gcs == b.gcs);
  REQUIRE(a.events == b.events);
  REQUIRE(a.frames == b.frames);
  REQUIRE(a.lost == b.lost);
  REQUIRE(a.strings == b.strings);
  REQUIRE(a.types == b.types);
  REQUIRE(a.methods == b.methods);
  REQUIRE(a.stacks == b.stacks);
  REQUIRE(a.modules.size() == b.modules.size());
  REQUIRE(a.threads.size() == b.threads.size());
  REQUIRE(a.infos == b.infos);
  REQUIRE(a.firstSeq == b.firstSeq);
  REQUIRE(a.endSeq == b.endSeq);
  REQUIRE(a.eventCount == b.eventCount);
  REQUIRE(a.allocs == b.allocs);
  REQUIRE(a.frees == b.frees);
  REQUIRE(a.reallocs == b.reallocs);
  REQUIRE(a.lostEvents == b.lostEvents);
  REQUIRE(a.endTimeNs == b.endTimeNs);
}

}  // namespace

TEST_CASE("follow: each growth replays only what was appended, and the replay then answers as "
          "one opened afresh",
          "[replay][index][property]") {
  Dir dir;
  const std::vector<uint8_t> whole = makeWorkload(33, 24, 120, 512, /*lost=*/false);
  const auto all = LogReader::fromBytes(whole);
  REQUIRE(all.end().complete);
  const std::vector<ChunkRef>& chunks = all.chunks();
  REQUIRE(chunks.size() > 40);
  const fs::path log = dir.path / "live.hml";
  const fs::path copy = dir.path / "copy.hml";

  // The recorder's first chunks, and half of the next one's bytes.
  size_t written = chunks[2].end() + (chunks[3].end() - chunks[3].offset) / 2;
  append(log, whole, 0, written);
  Replay live(log.string(), options(true));
  CHECK_FALSE(live.reader().end().complete);
  CHECK(live.reader().chunks().size() == 3);
  CHECK(live.grow() == Growth::kNone);  // nothing new since the open

  std::mt19937_64 rng(7);
  size_t next = 3;  // chunks the live replay has
  int grown = 0;
  while (next < chunks.size()) {
    // A few chunks at a time, the last of them cut in the middle now and then.
    size_t upTo = std::min(chunks.size(), next + 1 + static_cast<size_t>(rng() % 4));
    size_t end = chunks[upTo - 1].end();
    bool torn = upTo < chunks.size() && rng() % 3 == 0;
    size_t target = torn ? end + (chunks[upTo].end() - chunks[upTo].offset) / 3 : end;
    if (target > written) append(log, whole, written, target);
    written = std::max(written, target);

    // Where queries left it: at the end (the page's "now"), or somewhere earlier.
    const bool atEnd = rng() % 2 == 0;
    if (atEnd)
      live.seek(UINT64_MAX);
    else if (live.tables().endSeq > 0)
      live.seek(rng() % live.tables().endSeq);
    const uint64_t before = live.stats().eventsApplied;
    const uint64_t serial = live.serial();
    INFO("growth " << grown << ": chunks " << next << " to " << upTo << (torn ? " (torn)" : ""));
    REQUIRE(live.grow() == Growth::kGrew);
    ++grown;
    CHECK(live.serial() != serial);
    REQUIRE(live.reader().chunks().size() == upTo);
    REQUIRE(live.indexed());
    if (atEnd) {
      // The records of the appended chunks, nothing before them.
      uint64_t appended = 0;
      for (size_t k = next; k < upTo; ++k)
        if (chunks[k].header.type == static_cast<uint16_t>(ChunkType::kRecords))
          appended += chunks[k].header.recordCount;
      REQUIRE(live.stats().eventsApplied - before <= appended);
      REQUIRE(live.stats().eventsApplied - before + 64 >= appended / 2);
    }
    next = upTo;

    // The same bytes opened afresh.
    fs::copy_file(log, copy, fs::copy_options::overwrite_existing);
    Replay fresh(copy.string(), options(false));
    REQUIRE(fresh.reader().chunks().size() == upTo);
    requireSameTables(live.tables(), fresh.tables());
    fresh.seek(UINT64_MAX);
    REQUIRE(live.position() == UINT64_MAX);  // grow() leaves it at the new end
    REQUIRE(engineState(live) == engineState(fresh));
    REQUIRE(live.counters() == fresh.counters());
    for (int i = 0; i < 3 && fresh.tables().endSeq > 0; ++i) {
      uint64_t at = rng() % (fresh.tables().endSeq + 1);
      live.seek(at);
      fresh.seek(at);
      REQUIRE(engineState(live) == engineState(fresh));
      REQUIRE(live.counters() == fresh.counters());
      REQUIRE(live.describe(at) == fresh.describe(at));
    }
  }
  CHECK(grown > 8);
  CHECK_FALSE(live.reader().end().complete);

  // The footer: the log is complete, as an open of the whole file reads it.
  append(log, whole, written, whole.size());
  REQUIRE(live.grow() == Growth::kGrew);
  CHECK(live.reader().end().complete);
  CHECK(live.reader().index().has_value());
  CHECK(live.grow() == Growth::kNone);
  Replay complete(log.string(), options(false));
  requireSameTables(live.tables(), complete.tables());
  CHECK(live.damage() == std::nullopt);
  live.seek(complete.tables().endSeq);
  complete.seek(complete.tables().endSeq);
  CHECK(engineState(live) == engineState(complete));
  CHECK(live.resolve("gc:24") == complete.resolve("gc:24"));
}

TEST_CASE("follow: a log recorded again is another file, and damage appended ends the log before it",
          "[replay][index]") {
  Dir dir;
  const std::vector<uint8_t> whole = makeWorkload(34, 12, 100, 512, /*lost=*/false);
  const auto all = LogReader::fromBytes(whole);
  const std::vector<ChunkRef>& chunks = all.chunks();
  REQUIRE(chunks.size() > 12);
  const fs::path log = dir.path / "live.hml";

  SECTION("recorded again: truncated and written anew, longer than before") {
    append(log, whole, 0, chunks[4].end());
    Replay live(log.string(), options(true));
    const std::vector<uint8_t> other = makeWorkload(35, 12, 100, 512, false);
    fs::remove(log);  // heaprec -o truncates; a new file at the path is the same to a reader
    append(log, other, 0, other.size());
    CHECK(live.grow() == Growth::kReplaced);
  }
  SECTION("truncated in place and written again past the old length") {
    append(log, whole, 0, chunks[4].end());
    Replay live(log.string(), options(true));
    std::vector<uint8_t> other = makeWorkload(36, 12, 100, 512, false);
    { std::ofstream trunc(log, std::ios::binary | std::ios::trunc); }
    append(log, other, 0, other.size());
    CHECK(live.grow() == Growth::kReplaced);
  }
  SECTION("a shorter file") {
    append(log, whole, 0, chunks[6].end());
    Replay live(log.string(), options(true));
    fs::resize_file(log, chunks[3].end());
    CHECK(live.grow() == Growth::kReplaced);
  }
  SECTION("a corrupt chunk appended") {
    append(log, whole, 0, chunks[4].end());
    Replay live(log.string(), options(true));
    std::vector<uint8_t> bad(whole.begin(), whole.begin() + static_cast<long>(chunks[9].end()));
    // A byte of chunk 7's payload: its checksum fails when it is decoded.
    bad[chunks[7].offset + kChunkHeaderSize + 5] ^= 0x40;
    append(log, bad, chunks[4].end(), bad.size());
    REQUIRE(live.grow() == Growth::kGrew);
    REQUIRE(live.damage().has_value());
    CHECK(live.damage()->chunk() == 7);
    CHECK(live.reader().chunks().size() == 7);
    // As an open of the damaged file reads it.
    Replay fresh(log.string(), options(false));
    REQUIRE(fresh.damage().has_value());
    requireSameTables(live.tables(), fresh.tables());
    fresh.seek(UINT64_MAX);
    CHECK(engineState(live) == engineState(fresh));
    CHECK(live.grow() == Growth::kNone);  // the log ends at the damage
  }
}
