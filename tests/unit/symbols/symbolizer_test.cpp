// The symbolizer against this process's own code: the modules are described exactly as the
// recorder describes them (dl_iterate_phdr: path, load bias, PT_LOAD segments, build-id note),
// the addresses are real return addresses, and the expected lines come from __LINE__.
#include <elf.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "heapman/replay/symbolizer.h"
#include "modules.h"  // the recorder's module scan
#include "symtest_lib.h"

namespace fs = std::filesystem;
using heapman::log::ModuleLoad;
using heapman::replay::SourceFrame;
using heapman::replay::Symbolized;
using heapman::replay::Symbolizer;
using heapman::replay::SymbolizerOptions;

namespace {

// The loaded module holding `address`, as the recorder writes it into ModuleLoad (its own scan).
ModuleLoad moduleOf(uint64_t address) {
  for (auto& [base, m] : heapman::rec::scanModules())
    for (const heapman::log::ModuleSegment& seg : m.segments)
      if (address >= base + seg.vaddr && address < base + seg.vaddr + seg.memSize) return m;
  FAIL("no loaded module holds " << address);
  return {};
}

std::string baseName(const std::string& path) {
  return fs::path(path).filename().string();
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The executable's own function, reached through the same probe.
[[gnu::noinline]] symtest::Site exeFunction() {
  symtest::Site s{symtest_probe(), __LINE__};
  asm volatile("" ::: "memory");
  return s;
}

void checkFrame(const SourceFrame& f, const std::string& function, const char* file,
                uint32_t line) {
  CHECK(f.function == function);
  CHECK(baseName(f.file) == file);
  CHECK(f.line == line);
}

// A scratch directory of its own, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("symbols_tests." + std::to_string(getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Every `step`-th byte, from `first`, of the modules' executable segments.
std::vector<uint64_t> codeAddresses(std::initializer_list<ModuleLoad> modules, uint64_t first,
                                    uint64_t step) {
  std::vector<uint64_t> addresses;
  for (const ModuleLoad& m : modules)
    for (const auto& seg : m.segments)
      if (seg.flags & PF_X)
        for (uint64_t off = first; off < seg.memSize; off += step)
          addresses.push_back(m.base + seg.vaddr + off);
  return addresses;
}

}  // namespace

TEST_CASE("functions of a shared library: namespaced, template, static, method", "[symbols]") {
  const std::vector<std::pair<symtest::Site, std::string>> cases = {
      {symtest::namespaced(), "symtest::namespaced()"},
      {symtest::templated<int>(7), "symtest::Site symtest::templated<int>(int)"},
      {symtest::viaStatic(), "symtest::staticHelper()"},
      {symtest::Widget{}.method(3), "symtest::Widget::method(int) const"},
  };
  const ModuleLoad lib = moduleOf(cases[0].first.address);
  REQUIRE(baseName(lib.path) == "libsymtest.so");
  REQUIRE(!lib.buildId.empty());
  Symbolizer sym;
  sym.addModule(moduleOf(reinterpret_cast<uint64_t>(&exeFunction)));
  sym.addModule(lib);
  for (const auto& [site, function] : cases) {
    INFO(function);
    const Symbolized& s = sym.resolve(site.address);
    CHECK(s.address == site.address);
    CHECK(s.module == 1);
    CHECK(s.moduleName == "libsymtest.so");
    CHECK(s.moduleOffset == site.address - lib.base);
    CHECK(s.problem.empty());
    REQUIRE(s.frames.size() == 1);
    checkFrame(s.frames[0], function, "symtest_lib.cpp", site.line);
    CHECK(s.label() == function);
  }
}

TEST_CASE("an always_inline function: the inline chain, innermost first", "[symbols]") {
  const symtest::Site site = symtest::withInlined();
  Symbolizer sym;
  sym.addModule(moduleOf(site.address));
  const Symbolized& s = sym.resolve(site.address);
  CHECK(s.problem.empty());
  REQUIRE(s.frames.size() == 2);
  checkFrame(s.frames[0], "symtest::inlinedHelper(unsigned int)", "symtest_lib.cpp", site.line);
  checkFrame(s.frames[1], "symtest::withInlined()", "symtest_lib.cpp", site.callLine);
  CHECK(s.label() == "symtest::withInlined()");
}

TEST_CASE("a function of the main executable", "[symbols]") {
  const symtest::Site site = exeFunction();
  const ModuleLoad exe = moduleOf(site.address);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  CHECK(exe.path == std::string(self, static_cast<size_t>(n)));
  Symbolizer sym;
  sym.addModule(exe);
  const Symbolized& s = sym.resolve(site.address);
  CHECK(s.module == 0);
  CHECK(s.moduleName == "symbols_tests");
  CHECK(s.problem.empty());
  REQUIRE(s.frames.size() == 1);
  checkFrame(s.frames[0], "(anonymous namespace)::exeFunction()", "symbolizer_test.cpp", site.line);
}

TEST_CASE("an address outside every module", "[symbols]") {
  const symtest::Site site = symtest::namespaced();
  Symbolizer sym;
  sym.addModule(moduleOf(site.address));
  const Symbolized& s = sym.resolve(0x10);
  CHECK(s.module == -1);
  CHECK(s.frames.empty());
  CHECK(s.problem == "address outside every module");
  CHECK(s.label() == "0x10");
  CHECK(sym.resolve(0).label() == "0x0");
  CHECK(sym.resolve(UINT64_MAX).label() == "0xffffffffffffffff");
}

TEST_CASE("modules whose files can't be used give module+offset and say why", "[symbols]") {
  const symtest::Site site = symtest::namespaced();
  const ModuleLoad lib = moduleOf(site.address);
  const std::string offset = hex(site.address - lib.base);
  TempDir tmp;
  auto check = [&](ModuleLoad m, const std::string& problem) {
    INFO(m.path);
    Symbolizer sym;
    sym.addModule(m);
    const Symbolized& s = sym.resolve(site.address);
    CHECK(s.module == 0);
    CHECK(s.frames.empty());
    CHECK(s.problem == problem);
    CHECK(s.label() == baseName(m.path) + "+" + offset);
  };
  ModuleLoad m = lib;
  m.path = "/nonexistent-dir/libgone.so";
  check(m, "module file not found");
  m.path = tmp.path.string();  // a directory
  check(m, "module path is not a regular file");
  m.path = (tmp.path / "notelf.so").string();
  std::ofstream(m.path) << "not an ELF file, just text\n";
  check(m, "not an ELF file");
  m.path = (tmp.path / "empty.so").string();
  std::ofstream{m.path};
  check(m, "not an ELF file");
  m.path = (tmp.path / "truncated.so").string();
  fs::copy_file(lib.path, m.path);
  fs::resize_file(m.path, fs::file_size(m.path) / 2);
  check(m, "truncated ELF file");
  m.path = (tmp.path / "header_only.so").string();
  fs::copy_file(lib.path, m.path);
  fs::resize_file(m.path, 40);
  check(m, "not an ELF file");
  m = lib;
  m.buildId.back() ^= 0xff;
  check(m, "build id differs");
  m.buildId.push_back(1);
  check(m, "build id differs");
  m = lib;
  m.path = "";
  m.buildId.clear();
  Symbolizer sym;
  sym.addModule(m);
  CHECK(sym.resolve(site.address).problem == "module has no file name");
  CHECK(sym.resolve(site.address).label() == "module0+" + offset);
}

TEST_CASE("zero-size modules and overlapping modules", "[symbols]") {
  Symbolizer sym;
  ModuleLoad empty;
  empty.path = "/nonexistent-dir/empty.so";
  empty.base = 0x1000;
  sym.addModule(empty);  // no segments at all
  ModuleLoad zero = empty;
  zero.segments = {{0, 0, PF_R | PF_X}};
  sym.addModule(zero);
  ModuleLoad a;
  a.path = "/nonexistent-dir/a.so";
  a.base = 0x10000;
  a.segments = {{0, 0x4000, PF_R}, {0x5000, 0x1000, PF_R | PF_X}};
  sym.addModule(a);
  ModuleLoad b;  // loaded later inside a's first segment
  b.path = "/nonexistent-dir/b.so";
  b.base = 0x11000;
  b.segments = {{0, 0x1000, PF_R | PF_X}};
  sym.addModule(b);
  const std::vector<std::pair<uint64_t, int32_t>> expect = {
      {0x1000, -1}, {0x0fff, -1}, {0x10000, 2},  {0x10fff, 2}, {0x11000, 3}, {0x11fff, 3},
      {0x12000, 2}, {0x13fff, 2}, {0x14000, -1}, {0x15000, 2}, {0x15fff, 2}, {0x16000, -1}};
  for (auto [address, module] : expect) {
    INFO(hex(address));
    CHECK(sym.resolve(address).module == module);
  }
  CHECK(sym.resolve(0x11010).label() == "b.so+0x10");
  CHECK(sym.resolve(0x12010).label() == "a.so+0x2010");
  ModuleLoad c;  // covers all of a and b: takes everything
  c.path = "/nonexistent-dir/c.so";
  c.base = 0x8000;
  c.segments = {{0, 0x10000, PF_R | PF_X}};
  Symbolizer later;
  for (const ModuleLoad& m : {a, b, c}) later.addModule(m);
  for (uint64_t address : {0x10000, 0x11000, 0x15fff}) CHECK(later.resolve(address).module == 2);
  CHECK(later.resolve(0x7fff).module == -1);
}

TEST_CASE("copies without debug info: functions from the symbol tables", "[symbols]") {
  const symtest::Site named = symtest::namespaced();
  const symtest::Site local = symtest::viaStatic();
  const symtest::Site inlined = symtest::withInlined();
  const ModuleLoad lib = moduleOf(named.address);

  SECTION("strip --strip-debug: .symtab has every function, no lines") {
    ModuleLoad m = lib;
    m.path = SYMTEST_NODEBUG;
    Symbolizer sym;
    sym.addModule(m);
    for (auto [site, function] :
         {std::pair{named, "symtest::namespaced()"}, std::pair{local, "symtest::staticHelper()"},
          std::pair{inlined, "symtest::withInlined()"}}) {
      const Symbolized& s = sym.resolve(site.address);
      REQUIRE(s.frames.size() == 1);
      CHECK(s.frames[0] == SourceFrame{function, "", 0});
      CHECK(s.problem == "no debug info");
      CHECK(s.label() == function);
    }
  }
  SECTION("strip --strip-all: exported functions from .dynsym, a static one as module+offset") {
    ModuleLoad m = lib;
    m.path = SYMTEST_STRIPALL;
    Symbolizer sym;
    sym.addModule(m);
    const Symbolized& s = sym.resolve(named.address);
    REQUIRE(s.frames.size() == 1);
    CHECK(s.frames[0] == SourceFrame{"symtest::namespaced()", "", 0});
    const Symbolized& t = sym.resolve(local.address);
    CHECK(t.frames.empty());
    CHECK(t.problem == "no debug info and no symbol");
    CHECK(t.label() == "libsymtest_stripall.so+" + hex(local.address - lib.base));
  }
  SECTION("separate debug file found by build id under SymbolizerOptions::debugDirs") {
    TempDir tmp;
    std::string id;
    for (uint8_t byte : lib.buildId) id += hex(byte).substr(2).insert(0, byte < 16 ? "0" : "");
    fs::path dir = tmp.path / ".build-id" / id.substr(0, 2);
    fs::create_directories(dir);
    fs::copy_file(SYMTEST_DEBUGONLY, dir / (id.substr(2) + ".debug"));
    ModuleLoad m = lib;
    m.path = SYMTEST_NODEBUG;
    SymbolizerOptions options;
    options.debugDirs = {tmp.path.string()};
    Symbolizer sym(options);
    sym.addModule(m);
    Symbolizer reference;
    reference.addModule(lib);
    for (const symtest::Site& site : {named, local, inlined}) {
      const Symbolized& s = sym.resolve(site.address);
      CHECK(s.problem.empty());
      CHECK(s.frames == reference.resolve(site.address).frames);
      REQUIRE(!s.frames.empty());
      CHECK(s.frames[0].line == site.line);
    }
    CHECK(sym.resolve(inlined.address).frames.size() == 2);
  }
}

TEST_CASE("a compressed debug file is inflated once into the cache and read from there after",
          "[symbols]") {
  const symtest::Site named = symtest::namespaced();
  const symtest::Site inlined = symtest::withInlined();
  const ModuleLoad lib = moduleOf(named.address);
  TempDir tmp;
  std::string id;
  for (uint8_t byte : lib.buildId) id += hex(byte).substr(2).insert(0, byte < 16 ? "0" : "");
  const fs::path debugDir = tmp.path / "debug";
  const fs::path found = debugDir / ".build-id" / id.substr(0, 2) / (id.substr(2) + ".debug");
  fs::create_directories(found.parent_path());
  fs::copy_file(SYMTEST_DEBUGZLIB, found);
  const fs::path cache = tmp.path / "cache";
  const char* oldCache = std::getenv("XDG_CACHE_HOME");
  const std::string saved = oldCache ? oldCache : "";
  setenv("XDG_CACHE_HOME", cache.c_str(), 1);

  ModuleLoad m = lib;
  m.path = SYMTEST_NODEBUG;
  SymbolizerOptions options;
  options.debugDirs = {debugDir.string()};
  Symbolizer reference;
  reference.addModule(lib);
  const fs::path copy = cache / "heapman" / "debug" / (id + ".debug");
  // What a copy killed half-way leaves (a process that has exited), and one being written.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  REQUIRE(gone > 0);
  waitpid(gone, nullptr, 0);
  fs::create_directories(copy.parent_path());
  const fs::path stale = copy.string() + ".tmp." + std::to_string(gone) + ".0";
  const fs::path writing = copy.string() + ".tmp." + std::to_string(getpid()) + ".99";
  std::ofstream(stale) << "half";
  std::ofstream(writing) << "half";
  {
    Symbolizer first(options);
    first.addModule(m);
    for (const symtest::Site& site : {named, inlined})
      CHECK(first.resolve(site.address).frames == reference.resolve(site.address).frames);
  }
  REQUIRE(fs::is_regular_file(copy));
  CHECK(!fs::exists(stale));
  CHECK(fs::exists(writing));
  CHECK(fs::file_size(copy) > fs::file_size(SYMTEST_DEBUGZLIB));  // the sections inflated
  // Without the file it was made from, the next session still has the lines: it reads the copy.
  fs::remove(found);
  {
    Symbolizer second(options);
    second.addModule(m);
    for (const symtest::Site& site : {named, inlined}) {
      const Symbolized& s = second.resolve(site.address);
      CHECK(s.problem.empty());
      CHECK(s.frames == reference.resolve(site.address).frames);
    }
  }
  if (oldCache)
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
}

TEST_CASE("path maps find a module recorded under another directory", "[symbols]") {
  const symtest::Site site = symtest::namespaced();
  ModuleLoad m = moduleOf(site.address);
  const std::string dir = fs::path(m.path).parent_path().string();
  m.path = "/recorded/elsewhere/libsymtest.so";
  SymbolizerOptions options;
  options.pathMaps = {{"/unrelated", "/nowhere"}, {"/recorded/elsewhere", dir}};
  Symbolizer sym(options);
  sym.addModule(m);
  const Symbolized& s = sym.resolve(site.address);
  CHECK(s.problem.empty());
  REQUIRE(s.frames.size() == 1);
  checkFrame(s.frames[0], "symtest::namespaced()", "symtest_lib.cpp", site.line);
  CHECK(sym.modules().at(0).path == "/recorded/elsewhere/libsymtest.so");  // as recorded
}

TEST_CASE("frames share their names: one string per function and per file", "[symbols]") {
  const symtest::Site named = symtest::namespaced();
  const symtest::Site local = symtest::viaStatic();
  Symbolizer sym;
  sym.addModule(moduleOf(named.address));
  // The instruction after the call is in the same function, on another address.
  const uint64_t addresses[] = {named.address, named.address + 1, local.address};
  sym.resolveAll(addresses);
  const Symbolized& a = *sym.lookup(addresses[0]);
  const Symbolized& b = *sym.lookup(addresses[1]);
  const Symbolized& c = *sym.lookup(addresses[2]);
  REQUIRE(a.frames.size() == 1);
  REQUIRE(b.frames.size() == 1);
  REQUIRE(!c.frames.empty());
  CHECK(b.frames[0].function == "symtest::namespaced()");
  CHECK(&a.frames[0].function.str() == &b.frames[0].function.str());
  CHECK(baseName(c.frames.back().file) == "symtest_lib.cpp");
  CHECK(&a.frames[0].file.str() == &c.frames.back().file.str());
  // A name made by hand owns its string and compares by content.
  const heapman::replay::SymbolName own("symtest::namespaced()");
  CHECK(own == a.frames[0].function);
  CHECK("f: " + own == "f: symtest::namespaced()");
}

TEST_CASE("resolveAll with duplicates on many threads equals resolve() one by one", "[symbols]") {
  const ModuleLoad lib = moduleOf(symtest::namespaced().address);
  const ModuleLoad exe = moduleOf(reinterpret_cast<uint64_t>(&exeFunction));
  std::vector<uint64_t> addresses = codeAddresses({lib, exe}, 0, 7);
  // Every 7th byte of the executable's code is far more than needed; keep the run short.
  std::mt19937_64 rng(42);
  std::shuffle(addresses.begin(), addresses.end(), rng);
  if (addresses.size() > 60000) addresses.resize(60000);
  addresses.push_back(0x10);  // outside
  const size_t unique = addresses.size();
  for (size_t i = 0; i < unique; i += 3) addresses.push_back(addresses[i]);  // duplicates
  std::shuffle(addresses.begin(), addresses.end(), rng);

  SymbolizerOptions options;
  options.threads = 8;
  Symbolizer parallel(options);
  Symbolizer serial(SymbolizerOptions{1, {}, {}});
  for (Symbolizer* s : {&parallel, &serial}) {
    s->addModule(exe);
    s->addModule(lib);
  }
  CHECK(parallel.lookup(addresses[0]) == nullptr);
  parallel.resolveAll(addresses);
  parallel.resolveAll(addresses);  // all cached: nothing changes
  CHECK(parallel.stats().resolved == unique);
  size_t withLine = 0, withFunction = 0, different = 0;
  for (uint64_t a : addresses) {
    const Symbolized* p = parallel.lookup(a);
    REQUIRE(p != nullptr);
    const Symbolized& s = serial.resolve(a);
    if (!(*p == s) && ++different < 4) {
      auto show = [](const Symbolized& x) {
        std::string out = hex(x.address) + " " + x.label() + " [" + x.problem + "]";
        for (const SourceFrame& f : x.frames)
          out += " | " + f.function + " " + baseName(f.file) + ":" + std::to_string(f.line);
        return out;
      };
      std::fprintf(stderr, "%s\n   vs %s\n", show(*p).c_str(), show(s).c_str());
    }
    CHECK(&parallel.resolve(a) == p);
  }
  CHECK(different == 0);
  const Symbolizer::Stats st = serial.stats();
  CHECK(st.resolved == unique);
  withLine = parallel.stats().withLine;
  withFunction = parallel.stats().withFunction;
  CHECK(withLine == st.withLine);
  CHECK(withFunction == st.withFunction);
  // Nearly all of the code has a function; a little (PLT, padding) doesn't.
  CHECK(withFunction > unique * 9 / 10);
  CHECK(withLine > unique * 8 / 10);
}

TEST_CASE("function trees read from the DIE bytes give what libdw's DIE walk gives", "[symbols]") {
  const ModuleLoad lib = moduleOf(symtest::namespaced().address);
  const ModuleLoad exe = moduleOf(reinterpret_cast<uint64_t>(&exeFunction));
  std::vector<uint64_t> addresses = codeAddresses({lib, exe}, 1, 11);
  if (addresses.size() > 100000) addresses.resize(100000);

  auto resolveAll = [&](bool libdwOnly, Symbolizer& sym) {
    if (libdwOnly) setenv("HEAPMAN_SYMBOLS_LIBDW", "1", 1);
    sym.addModule(lib);
    sym.addModule(exe);
    sym.resolveAll(addresses);
    unsetenv("HEAPMAN_SYMBOLS_LIBDW");
  };
  Symbolizer read(SymbolizerOptions{1, {}, {}});
  Symbolizer walked(SymbolizerOptions{1, {}, {}});
  resolveAll(false, read);
  resolveAll(true, walked);
  CHECK(read.stats().unitsRead > 0);
  CHECK(read.stats().unitsWalked == 0);
  CHECK(walked.stats().unitsRead == 0);
  CHECK(walked.stats().unitsWalked == read.stats().unitsRead);
  size_t different = 0, inlined = 0;
  for (uint64_t a : addresses) {
    const Symbolized& r = *read.lookup(a);
    different += !(r == *walked.lookup(a));
    inlined += r.frames.size() > 1;
  }
  CHECK(different == 0);
  CHECK(inlined > 100);  // the trees under test have inlined copies
}

TEST_CASE("names of a C function, an inlined static function, an inlined constructor",
          "[symbols]") {
  const symtest_c_site c = symtest_c_function();
  const symtest::Site staticInlined = symtest::withStaticInlined();
  const symtest::Site constructor = symtest::withInlinedConstructor();
  Symbolizer sym;
  sym.addModule(moduleOf(c.address));

  const Symbolized& s = sym.resolve(c.address);
  REQUIRE(s.frames.size() == 1);
  checkFrame(s.frames[0], "symtest_c_function", "symtest_c.c", c.line);

  // Qualified by the enclosing namespaces and classes; DWARF has no parameter list to print.
  const Symbolized& t = sym.resolve(staticInlined.address);
  REQUIRE(t.frames.size() == 2);
  checkFrame(t.frames[0], "symtest::staticInlined", "symtest_lib.cpp", staticInlined.line);
  checkFrame(t.frames[1], "symtest::withStaticInlined()", "symtest_lib.cpp",
             staticInlined.callLine);

  const Symbolized& u = sym.resolve(constructor.address);
  REQUIRE(u.frames.size() == 2);
  // GCC names the inlined constructor after its unified ("C4") symbol.
  checkFrame(u.frames[0], "symtest::Gadget::Gadget(unsigned int)", "symtest_lib.cpp",
             constructor.line);
  checkFrame(u.frames[1], "symtest::withInlinedConstructor()", "symtest_lib.cpp",
             constructor.callLine);
}

TEST_CASE("line tables are read directly, or by libdw with HEAPMAN_SYMBOLS_LIBDW=1", "[symbols]") {
  const ModuleLoad lib = moduleOf(symtest::namespaced().address);
  const ModuleLoad exe = moduleOf(reinterpret_cast<uint64_t>(&exeFunction));
  std::vector<uint64_t> addresses = codeAddresses({lib, exe}, 2, 5);
  if (addresses.size() > 100000) addresses.resize(100000);
  Symbolizer own(SymbolizerOptions{1, {}, {}});
  Symbolizer libdw(SymbolizerOptions{1, {}, {}});
  for (Symbolizer* s : {&own, &libdw}) {
    if (s == &libdw) setenv("HEAPMAN_SYMBOLS_LIBDW", "1", 1);
    s->addModule(lib);
    s->addModule(exe);
    s->resolveAll(addresses);
    unsetenv("HEAPMAN_SYMBOLS_LIBDW");
  }
  CHECK(own.stats().linesRead > 0);
  CHECK(own.stats().linesLibdw == 0);
  CHECK(libdw.stats().linesRead == 0);
  CHECK(libdw.stats().linesLibdw == own.stats().linesRead);
  size_t different = 0, lines = 0, callFiles = 0;
  for (uint64_t a : addresses) {
    const Symbolized& r = *own.lookup(a);
    different += !(r == *libdw.lookup(a));
    lines += !r.frames.empty() && r.frames.front().line > 0;
    callFiles += r.frames.size() > 1 && !r.frames[1].file.empty();
  }
  CHECK(different == 0);
  CHECK(lines > addresses.size() * 8 / 10);
  CHECK(callFiles > 100);  // inlined copies' call sites, named from the same file tables
}
