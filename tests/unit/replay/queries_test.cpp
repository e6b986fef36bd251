// Queries on a small log whose answers are known by hand: attribution through the exclusion list,
// blame, diff with born objects, churn, allocs, types, compare, folded stacks, and the errors of
// exclusion files.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "heapman/replay/queries.h"
#include "test_log.h"

using namespace rtest;
using namespace heapman::replay;

namespace {

constexpr uint64_t kGame = 0x400000, kLibc = 0x7f0000000000;

// main -> spawn -> malloc (libc) ; main -> load -> malloc ; managed Update -> (wrapper alloc)
std::vector<uint8_t> queryLog(uint32_t spawnCount) {
  LogBuilder b;
  b.put(ModuleLoad{b.next(), "/opt/game", kGame, 0x10000, {}, {}});
  b.put(ModuleLoad{b.next(), "/lib/libc.so.6", kLibc, 0x10000, {}, {}});
  b.put(LogString{1, "level_start"});
  b.put(LogString{2, "level_end"});
  b.put(TypeDef{1, "Enemy", 64, 0});
  b.put(MethodDef{1, "Game:Update ()", 0});
  b.put(MethodDef{2, "(wrapper alloc) object:Alloc", 0});
  b.put(StackNode{1, 0, kGame + 0x100, false});  // main
  b.put(StackNode{2, 1, kGame + 0x200, false});  // spawn
  b.put(StackNode{3, 2, kLibc + 0x10, false});   // malloc
  b.put(StackNode{4, 1, kGame + 0x300, false});  // load
  b.put(StackNode{5, 4, kLibc + 0x10, false});   // malloc
  b.put(StackNode{6, 0, 1, true});
  b.put(StackNode{7, 6, 2, true});
  b.put(Alloc{b.next(), HeapKind::kNative, 0x1000, 100, 112, 5, 0});  // load: survives
  b.put(CustomEvent{b.next(), 1, {}});                                 // level_start#1
  uint64_t a = 0x2000;
  for (uint32_t i = 0; i < spawnCount; ++i)
    b.put(Alloc{b.next(), HeapKind::kGcNormal, a += 64, 64, 64, 3, 1});
  b.put(Alloc{b.next(), HeapKind::kManaged, 0x9000, 24, 32, 7, 0});
  b.put(Free{b.next(), HeapKind::kNative, 0x1000});
  b.put(Alloc{b.next(), HeapKind::kNative, 0x1000, 50, 64, 5, 0});
  b.put(GcBegin{b.next(), 1, 0, -1});
  b.put(Collected{1, {0x2040, 0x9000}});
  b.put(GcEnd{b.next(), 1, 0, 0, 10});
  b.put(CustomEvent{b.next(), 2, {}});  // level_end#1
  return b.finish();
}

ReplayOptions quiet() {
  ReplayOptions o;
  o.useIndex = false;
  o.notes = nullptr;
  return o;
}

Exclusions libcAndWrappers() {
  Exclusions e;
  e.add("libc\\.so", "test");
  e.add("^\\(wrapper alloc\\)", "test");
  return e;
}

}  // namespace

TEST_CASE("attribution skips excluded frames and names frames module+offset", "[replay][queries]") {
  Replay r(LogReader::fromBytes(queryLog(3), "q.hml"), quiet());
  FrameNamer names(r.tables(), false);
  Exclusions ex = libcAndWrappers();
  Attribution a(r.tables(), names, ex);
  CHECK(a.site(a.siteOf(3)).function == "game+0x200");
  CHECK(a.site(a.siteOf(3)).module == "game");
  CHECK(a.site(a.siteOf(5)).function == "game+0x300");
  CHECK(a.site(a.siteOf(7)).function == "Game:Update ()");
  CHECK(a.site(a.siteOf(7)).module == "[managed]");
  CHECK(a.site(a.siteOf(0)).function == "(no stack)");
  CHECK(a.folded(3) == "game+0x100;game+0x200;libc.so.6+0x10");
  Exclusions all;
  all.add(".", "test");
  Attribution leaf(r.tables(), names, all);
  CHECK(leaf.site(leaf.siteOf(3)).function == "libc.so.6+0x10");  // all excluded: the leaf
}

TEST_CASE("blame, diff, churn, allocs, types and folded stacks give the hand-computed rows",
          "[replay][queries]") {
  Replay r(LogReader::fromBytes(queryLog(3), "q.hml"), quiet());
  FrameNamer names(r.tables(), false);
  Exclusions ex = libcAndWrappers();
  Attribution a(r.tables(), names, ex);

  r.seek(r.resolve("level_end#1"));
  BlameResult b = blame(r, a, SortBy::kBytes, 0);
  CHECK(b.totalBytes == 128 + 50);
  CHECK(b.totalObjects == 3);
  REQUIRE(b.rows.size() == 2);
  CHECK(b.rows[0].site.function == "game+0x200");
  CHECK(b.rows[0].bytes == 128);
  CHECK(b.rows[0].objects == 2);
  REQUIRE(b.rows[0].types.size() == 1);
  CHECK(b.rows[0].types[0].type == "Enemy");
  CHECK(b.rows[1].site.function == "game+0x300");
  CHECK(b.rows[1].types[0].type == "(native)");
  CHECK(b.rows[0].share == Approx(128.0 / 178.0));
  CHECK(blame(r, a, SortBy::kBytes, 1).rows.size() == 1);
  CHECK(blame(r, a, SortBy::kName, 0).rows[0].site.function == "game+0x200");

  DiffResult d = diff(r, a, r.resolve("level_start#1"), r.resolve("level_end#1"), true,
                      SortBy::kBytes, 0);
  REQUIRE(d.functions.size() == 2);
  CHECK(d.functions[0].name == "game+0x200");
  CHECK(d.functions[0].deltaBytes() == 128);
  CHECK(d.functions[1].name == "game+0x300");
  CHECK(d.functions[1].bytesA == 100);
  CHECK(d.functions[1].bytesB == 50);
  CHECK(d.functions[1].deltaObjects() == 0);
  REQUIRE(d.born.size() == 3);  // two enemies and the re-allocated 0x1000
  CHECK(d.born[0].address == 0x2080);
  CHECK(d.born[2].address == 0x1000);
  CHECK(d.born[2].epoch == 0);

  ChurnResult c = churn(r, a, r.resolve("start"), r.resolve("end"), SortBy::kBytes, 0);
  CHECK(c.collectedObjects == 2);
  CHECK(c.collectedBytes == 64 + 24);
  CHECK(c.freedObjects == 1);
  CHECK(c.freedBytes == 100);
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[0].site.function == "game+0x300");  // 100 bytes freed
  CHECK(c.rows[0].allocatedObjects == 2);
  CHECK(c.rows[1].site.function == "game+0x200");
  CHECK(c.rows[1].collectedBytes == 64);
  CHECK(c.rows[2].site.function == "Game:Update ()");

  AllocFilter f;
  f.typeRegex = "^Enemy$";
  AllocsResult al = listAllocs(r, a, r.resolve("start"), r.resolve("end"), f);
  REQUIRE(al.events.size() == 4);  // three allocs, one collected
  CHECK(al.events[3].kind == "collected");
  CHECK(al.events[3].address == 0x2040);
  f.typeRegex = "([";
  CHECK_THROWS_WITH(listAllocs(r, a, r.resolve("start"), r.resolve("end"), f),
                    Catch::StartsWith("bad type regex '(['"));

  uint64_t from = r.resolve("level_start#1");
  TypesResult t = typeCounts(r, r.resolve("end"), &from, SortBy::kName, 0);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].type == "(native)");
  CHECK(t.rows[0].bornBetween == 1);
  CHECK(t.rows[1].type == "Enemy");
  CHECK(t.rows[1].objectsA == 0);
  CHECK(t.rows[1].objectsB == 2);

  r.seek(r.resolve("end"));
  std::vector<FoldedLine> fl = foldedLive(r, a);
  REQUIRE(fl.size() == 2);
  CHECK(fl[0].stack == "game+0x100;game+0x200;libc.so.6+0x10");
  CHECK(fl[0].bytes == 128);
  std::vector<FoldedLine> fc = foldedChurn(r, a, r.resolve("start"), r.resolve("end"));
  REQUIRE(fc.size() == 3);
  CHECK(fc[0].stack == "Game:Update ();(wrapper alloc) object:Alloc");
  CHECK(fc[2].stack == "game+0x100;game+0x300;libc.so.6+0x10");
  CHECK(fc[2].bytes == 100);
}

TEST_CASE("compare matches sites across two logs", "[replay][queries]") {
  Replay ra(LogReader::fromBytes(queryLog(3), "a.hml"), quiet());
  Replay rb(LogReader::fromBytes(queryLog(7), "b.hml"), quiet());
  FrameNamer na(ra.tables(), false), nb(rb.tables(), false);
  Exclusions ex = libcAndWrappers();
  Attribution aa(ra.tables(), na, ex), ab(rb.tables(), nb, ex);
  DiffResult d = compareLogs(ra, aa, ra.resolve("end"), rb, ab, rb.resolve("end"), SortBy::kBytes, 0);
  REQUIRE(d.functions.size() == 2);
  CHECK(d.functions[0].name == "game+0x200");
  CHECK(d.functions[0].objectsA == 2);
  CHECK(d.functions[0].objectsB == 6);
  CHECK(d.functions[0].deltaBytes() == 4 * 64);
  CHECK(d.from == "a.hml@level_end#1");  // the last event names the end
}

TEST_CASE("exclusion files: comments, blank lines, and a bad regex named by file and line",
          "[replay][queries]") {
  auto path = std::filesystem::temp_directory_path() / ("excl-" + std::to_string(::getpid()));
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("# comment\n\n  ^malloc$  \nlibc\\.so\n", f);
    std::fclose(f);
  }
  Exclusions e = Exclusions::fromFile(path.string());
  CHECK(e.patterns() == std::vector<std::string>{"^malloc$", "libc\\.so"});
  CHECK(e.excluded(NamedFrame{"malloc", "x", "", 0}));
  CHECK(e.excluded(NamedFrame{"foo", "libc.so.6", "", 0}));
  CHECK_FALSE(e.excluded(NamedFrame{"mallocate", "game", "", 0}));
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("ok\n# fine\nstd::vector<(\n", f);
    std::fclose(f);
  }
  CHECK_THROWS_WITH(Exclusions::fromFile(path.string()),
                    Catch::StartsWith(path.string() + ":3: bad regex 'std::vector<('"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(Exclusions::fromFile("/no/such/file"),
                    "cannot read exclusion file /no/such/file");
  CHECK(parseSortBy("objects") == SortBy::kObjects);
  CHECK_THROWS_WITH(parseSortBy("size"), "unknown sort key 'size' (bytes, objects, name)");
}

TEST_CASE("native frames inside Mono JIT code are named by their method, also from the index",
          "[replay][queries]") {
  LogBuilder b;
  b.put(MethodDef{1, "Game.Enemy:Think ()", 0});
  b.put(MethodDef{2, "Game.Enemy:Move ()", 0});
  b.put(JitRange{b.next(), 1, 0x50000000, 0x100});
  b.put(JitRange{b.next(), 2, 0x50000100, 0x80});
  b.put(StackNode{1, 0, 0x50000010, false});  // Think (JIT code)
  b.put(StackNode{2, 1, 0x50000120, false});  // Move (JIT code)
  b.put(StackNode{3, 2, 0x60000000, false});  // unknown native
  b.put(Alloc{b.next(), HeapKind::kManaged, 0x1000, 32, 32, 3, 0});
  auto bytes = b.finish();
  auto dir = std::filesystem::temp_directory_path() / ("jit-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string log = (dir / "jit.hml").string();
  FILE* f = std::fopen(log.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  ReplayOptions o;
  o.notes = nullptr;
  for (int open = 0; open < 2; ++open) {  // built, then loaded from the index
    Replay r(log, o);
    CHECK(r.index().built == (open == 0));
    REQUIRE(r.tables().jitRanges.size() == 2);
    FrameNamer names(r.tables(), false);
    CHECK(names.frames(1)[0].function == "Game.Enemy:Think ()");
    CHECK(names.frames(1)[0].module == "[jit]");
    CHECK(names.frames(2)[0].function == "Game.Enemy:Move ()");
    CHECK(names.frames(3)[0].function == "0x60000000");
    Exclusions none;
    Attribution a(r.tables(), names, none);
    CHECK(a.folded(3) == "Game.Enemy:Think ();Game.Enemy:Move ();0x60000000");
  }
  std::filesystem::remove_all(dir);
}
