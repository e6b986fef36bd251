// Inputs that are not logs: empty, random bytes, directories, missing files, executables.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_support.h"

using namespace hmtest;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed with its contents at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "heapman-logformat-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path file(const std::string& name, const Bytes& contents) const {
    fs::path p = path / name;
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(contents.data()), static_cast<std::streamsize>(contents.size()));
    return p;
  }
};

}  // namespace

TEST_CASE("empty input is kEmpty", "[badinput]") {
  auto err = formatErrorOf([] { LogReader::fromBytes({}); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kEmpty);
  CHECK(err->chunk() == FormatError::kNoChunk);
  CHECK_THAT(err->what(), Catch::Contains("empty (0 bytes)"));

  TempDir dir;
  err = formatErrorOf([&] { LogReader::open(dir.file("empty.hml", {}).string()); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kEmpty);
}

TEST_CASE("random bytes are not a log", "[badinput]") {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Bytes b = noise(1 + seed * 37, seed);
    if (b[0] == 'H') b[0] = 'x';  // never the first magic byte
    INFO("seed " << seed << ", " << b.size() << " bytes");
    auto err = formatErrorOf([&] { LogReader::fromBytes(b); });
    REQUIRE(err);
    CHECK(err->code() == ErrorCode::kNotALog);
    CHECK(err->offset() == 0);
    CHECK_THAT(err->what(), Catch::Contains("is not a HeapMan log"));
  }
  // Text that merely starts like the magic.
  std::string text = "HEAPMAN log, honest\n";
  auto err = formatErrorOf([&] { LogReader::fromBytes(Bytes(text.begin(), text.end())); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kNotALog);
}

TEST_CASE("opening a directory is kIo naming the problem", "[badinput]") {
  TempDir dir;
  auto err = formatErrorOf([&] { LogReader::open(dir.path.string()); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kIo);
  CHECK(err->chunk() == FormatError::kNoChunk);
  CHECK_THAT(err->what(), Catch::Contains("directory"));
}

TEST_CASE("opening a missing file is kIo", "[badinput]") {
  TempDir dir;
  auto err = formatErrorOf([&] { LogReader::open((dir.path / "no-such.hml").string()); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kIo);
  CHECK_THAT(err->what(), Catch::Contains("cannot open") && Catch::Contains("No such file"));
}

TEST_CASE("opening a device is kIo", "[badinput]") {
  auto err = formatErrorOf([&] { LogReader::open("/dev/null"); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kIo);
  CHECK_THAT(err->what(), Catch::Contains("not a regular file"));
}

TEST_CASE("an ELF executable is not a log", "[badinput]") {
  REQUIRE(fs::is_regular_file("/bin/true"));
  auto err = formatErrorOf([&] { LogReader::open("/bin/true"); });
  REQUIRE(err);
  CHECK(err->code() == ErrorCode::kNotALog);
  CHECK(err->chunk() == FormatError::kNoChunk);
}

TEST_CASE("a log file opens like the same bytes in memory", "[badinput]") {
  TempDir dir;
  const Bytes log = smallMultiChunkLog(true);
  fs::path p = dir.file("good.hml", log);
  LogReader f = LogReader::open(p.string());
  LogReader m = LogReader::fromBytes(log);
  CHECK(f.name() == p.string());
  CHECK(m.name() == "<memory>");
  CHECK(f.fileSize() == log.size());
  CHECK(Bytes(f.bytes().begin(), f.bytes().end()) == log);
  CHECK(f.header() == m.header());
  CHECK(f.end().complete);
  CHECK(f.chunks().size() == m.chunks().size());
  requireSameRecords(decodeAll(f), decodeAll(m));
  CHECK(allSegments(f) == allSegments(m));

  // A truncated file (a recorder killed mid-write) opens too.
  fs::path cut = dir.file("cut.hml", Bytes(log.begin(), log.begin() + static_cast<ptrdiff_t>(log.size() / 2)));
  LogReader t = LogReader::open(cut.string());
  CHECK_FALSE(t.end().complete);
  CHECK(t.end().fileBytes == log.size() / 2);
}
