// Every single-bit flip of a small multi-chunk log must be detected by reading plus summarize()
// (what `heapman verify` does), and reported at the right place with the right code.
#include "test_support.h"

using namespace hmtest;

namespace {

struct Expected {
  std::vector<ErrorCode> codes;  // any of these
  int64_t chunk = FormatError::kNoChunk;
  uint64_t offset = 0;
};

struct Layout {
  uint64_t headerEnd = 0;
  std::vector<ChunkRef> chunks;
  uint64_t indexOffset = 0;   // of the index chunk; == size when there is no footer
  uint64_t trailerOffset = 0; // == size when there is no footer
};

Layout layoutOf(const Bytes& log) {
  LogReader r = LogReader::fromBytes(log);
  Layout l;
  l.headerEnd = firstChunkOffset(log);
  l.chunks = r.chunks();
  l.indexOffset = l.chunks.empty() ? l.headerEnd : l.chunks.back().end();
  l.trailerOffset = r.end().complete ? log.size() - kTrailerSize : log.size();
  if (!r.end().complete) REQUIRE(l.indexOffset == log.size());
  return l;
}

// What flipping a bit of byte `at` must produce; nullopt for the bits that by design cannot be
// detected (the minor version: a newer minor must stay readable).
std::optional<Expected> expectedFor(const Layout& l, const Bytes& flipped, uint64_t at) {
  using E = ErrorCode;
  const uint64_t size = flipped.size();
  if (at < 8) return Expected{{E::kNotALog}, FormatError::kNoChunk, 0};
  if (at < 10) {
    uint64_t major = loadLe(flipped.data() + 8, 2);
    return Expected{{major < kOldestMajor ? E::kOlderVersion : E::kNewerVersion}, FormatError::kNoChunk, 8};
  }
  if (at < 12) return std::nullopt;
  if (at < 16) {
    uint64_t hlen = loadLe(flipped.data() + 12, 4);
    if (hlen > kMaxHeaderLength) return Expected{{E::kBadHeader}, FormatError::kNoChunk, 12};
    if (kPrefixSize + hlen > size) return Expected{{E::kTruncatedHeader}, FormatError::kNoChunk, size};
    return Expected{{E::kBadHeader}, FormatError::kNoChunk, kPrefixSize};
  }
  if (at < l.headerEnd) return Expected{{E::kBadHeader}, FormatError::kNoChunk, kPrefixSize};
  // Bytes 0..31 of a chunk header are covered by its header check (28..31 are the check itself);
  // bytes 32..39 are the payload checksum, compared when the payload is read.
  auto inChunk = [&](uint64_t offset, int64_t number) {
    return Expected{{at - offset < 32 ? E::kBadChunkHeader : E::kBadChecksum}, number, offset};
  };
  for (const ChunkRef& c : l.chunks)
    if (at < c.end()) return inChunk(c.offset, c.number);
  if (at < l.trailerOffset) return inChunk(l.indexOffset, static_cast<int64_t>(l.chunks.size()));
  return Expected{{E::kBadFooter}, FormatError::kNoChunk, l.trailerOffset};
}

void flipEveryBit(const Bytes& log) {
  const Layout l = layoutOf(log);
  REQUIRE(l.chunks.size() >= 5);
  const LogSummary clean = summarize(LogReader::fromBytes(log));
  size_t undetectable = 0, checked = 0;
  std::vector<std::string> failures;
  for (uint64_t at = 0; at < log.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes b = log;
      b[at] ^= static_cast<uint8_t>(1u << bit);
      std::optional<Expected> want = expectedFor(l, b, at);
      std::optional<FormatError> got = formatErrorOf([&] { readAndSummarize(b); });
      ++checked;
      std::string where = "byte " + std::to_string(at) + " bit " + std::to_string(bit);
      if (!want) {
        ++undetectable;
        // The minor version is not covered by any checksum: the log reads with the new minor.
        if (got) {
          failures.push_back(where + " (minor version): unexpected " + describe(*got));
        } else {
          LogReader r = LogReader::fromBytes(b);
          if (r.minor() != loadLe(b.data() + 10, 2) || summarize(r).events != clean.events)
            failures.push_back(where + " (minor version): not read as the flipped minor");
        }
        continue;
      }
      if (!got) {
        failures.push_back(where + ": flip NOT DETECTED");
        continue;
      }
      bool codeOk = std::find(want->codes.begin(), want->codes.end(), got->code()) != want->codes.end();
      if (!codeOk || got->chunk() != want->chunk || got->offset() != want->offset) {
        failures.push_back(where + ": want " + errorCodeName(want->codes.front()) + " chunk " +
                           std::to_string(want->chunk) + " offset " + std::to_string(want->offset) +
                           ", got " + describe(*got));
        continue;
      }
      // The message names the chunk (and its offset) when there is one.
      if (want->chunk != FormatError::kNoChunk) {
        std::string name = "chunk " + std::to_string(want->chunk) + " at byte " +
                           std::to_string(want->offset);
        if (std::string(got->what()).find(name) == std::string::npos)
          failures.push_back(where + ": message does not name " + name + ": " + got->what());
      }
    }
  }
  CHECK(checked == log.size() * 8);
  CHECK(undetectable == 16);  // exactly the two bytes of the minor version
  for (size_t i = 0; i < failures.size() && i < 40; ++i) UNSCOPED_INFO(failures[i]);
  CHECK(failures.size() == 0);
}

}  // namespace

TEST_CASE("every single-bit flip of a finished log is detected and located", "[bitflip]") {
  const Bytes log = smallMultiChunkLog(true);
  INFO("log of " << log.size() << " bytes");
  flipEveryBit(log);
}

TEST_CASE("every single-bit flip of a log without footer is detected and located", "[bitflip]") {
  const Bytes log = smallMultiChunkLog(false);
  flipEveryBit(log);
}

TEST_CASE("version fields: flips name the version problem", "[bitflip][version]") {
  const Bytes log = smallMultiChunkLog(true);
  Bytes b = log;
  b[9] ^= 0x80;  // major 0x8001
  auto err = formatErrorOf([&] { LogReader::fromBytes(b); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kNewerVersion);
  CHECK_THAT(err->what(), Catch::Contains("32769." + std::to_string(kFormatMinor)) &&
                              Catch::Contains("upgrade heapman"));
}
