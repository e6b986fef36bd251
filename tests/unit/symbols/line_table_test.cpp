// LineTable (the symbolizer's own .debug_line reader) against libdw's dwarf_getsrclines on real
// files: every row, every file name, and the lookups around every row's address.
#include "line_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <climits>
#include <cstring>
#include <string>

namespace {

using heapman::replay::detail::LineSections;
using heapman::replay::detail::LineTable;

struct Compared {
  size_t units = 0, read = 0, rows = 0, lookups = 0, files = 0;
  size_t byOrder[3] = {};  // units by LineTable::Order
  size_t versions[6] = {};
  size_t different = 0;
};

std::string show(const char* s) {
  return s ? std::string("\"") + s + "\"" : "null";
}

// Compares the tables of every unit of `path` with libdw's.
Compared compareFile(const std::string& path) {
  Compared c;
  int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  Dwarf* dbg = dwarf_begin(fd, DWARF_C_READ);
  REQUIRE(dbg != nullptr);
  const LineSections sections = LineSections::of(dbg);
  CHECK(sections.usable);
  auto differ = [&](const std::string& what) {
    if (++c.different <= 5) WARN(path << ": " << what);
  };
  Dwarf_Off off = 0, next = 0;
  size_t headerSize = 0;
  while (dwarf_nextcu(dbg, off, &next, &headerSize, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cudie;
    const Dwarf_Off dieOffset = off + headerSize;
    off = next;
    if (!dwarf_offdie(dbg, dieOffset, &cudie)) continue;
    Dwarf_Lines* lines = nullptr;
    size_t nlines = 0;
    if (dwarf_getsrclines(&cudie, &lines, &nlines) != 0) continue;
    ++c.units;
    LineTable t;
    if (!t.read(&cudie, sections)) {
      differ("unit at " + std::to_string(dieOffset) + ": not read");
      continue;
    }
    ++c.read;
    Dwarf_Half version = 0;
    dwarf_cu_info(cudie.cu, &version, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    ++c.versions[version <= 5 ? version : 0];

    // File names, by index, past the end included.
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    REQUIRE(dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0);
    if (t.fileCount() != nfiles)
      differ("file count " + std::to_string(t.fileCount()) + " vs " + std::to_string(nfiles));
    for (size_t i = 0; i <= nfiles + 1; ++i) {
      const char* theirs = dwarf_filesrc(files, i, nullptr, nullptr);
      const std::string* ours = t.fileName(i);
      ++c.files;
      if ((theirs == nullptr) != (ours == nullptr) || (ours && *ours != theirs))
        differ("file " + std::to_string(i) + ": " + (ours ? "\"" + *ours + "\"" : "null") +
               " vs " + show(theirs));
    }

    // Rows in libdw's order.
    if (t.rows().size() != nlines) {
      differ("rows " + std::to_string(t.rows().size()) + " vs " + std::to_string(nlines));
      continue;
    }
    ++c.byOrder[static_cast<int>(t.order())];
    for (size_t i = 0; i < nlines; ++i) {
      Dwarf_Line* line = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr = 0;
      int lineNo = 0;
      bool end = false;
      REQUIRE(dwarf_lineaddr(line, &addr) == 0);
      REQUIRE(dwarf_lineno(line, &lineNo) == 0);
      REQUIRE(dwarf_lineendsequence(line, &end) == 0);
      const LineTable::Row& r = t.rows()[i];
      const std::string* ours = t.fileName(r.file);
      const char* theirs = dwarf_linesrc(line, nullptr, nullptr);
      ++c.rows;
      if (r.address != addr || r.line != lineNo || (r.endSequence != 0) != end ||
          (theirs == nullptr) != (ours == nullptr) || (ours && *ours != theirs))
        differ("row " + std::to_string(i) + " of the unit at " + std::to_string(dieOffset));
    }

    // Lookups at, just before and just after every row's address.
    for (size_t i = 0; i < nlines; ++i) {
      for (uint64_t a : {t.rows()[i].address - 1, t.rows()[i].address, t.rows()[i].address + 1}) {
        Dwarf_Line* line = dwarf_getsrc_die(&cudie, a);
        const LineTable::Row* r = t.find(a);
        ++c.lookups;
        int lineNo = 0;
        if (line) dwarf_lineno(line, &lineNo);
        const char* theirs = line ? dwarf_linesrc(line, nullptr, nullptr) : nullptr;
        const std::string* ours = r ? t.fileName(r->file) : nullptr;
        if ((line == nullptr) != (r == nullptr) || (r && r->line != lineNo) ||
            (theirs == nullptr) != (ours == nullptr) || (ours && *ours != theirs))
          differ("lookup at " + std::to_string(a));
      }
    }
  }
  dwarf_end(dbg);
  close(fd);
  return c;
}

std::string selfPath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  REQUIRE(n > 0);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

TEST_CASE("line tables read from .debug_line give what libdw's dwarf_getsrclines gives",
          "[symbols]") {
  // This test program (C++ from many headers, its units' sequences out of address order), the
  // library under test's debug info alone, the same with compressed sections, and the library
  // built with DWARF 4 and 2 (line tables of versions 4 and 3: directory 0 from DW_AT_comp_dir,
  // files numbered from 1), and the library's C part compiled by a relative name (its file in
  // directory 0).
  struct Case {
    std::string path;
    unsigned version;
  };
  for (const Case& k : {Case{selfPath(), 5}, Case{SYMTEST_DEBUGONLY, 5},
                        Case{SYMTEST_DEBUGZLIB, 5}, Case{SYMTEST_DWARF4, 4},
                        Case{SYMTEST_DWARF2, 2}, Case{SYMTEST_C_RELATIVE, 4}}) {
    INFO(k.path);
    const Compared c = compareFile(k.path);
    CHECK(c.units > 0);
    CHECK(c.read == c.units);
    CHECK(c.different == 0);
    CHECK(c.rows > 5);
    CHECK(c.lookups == 3 * c.rows);
    CHECK(c.versions[k.version] == c.read);
    if (k.path == selfPath()) {
      // All three ways to libdw's order are taken: as written, whole sequences moved, and
      // interleaving sequences sorted row by row.
      CHECK(c.byOrder[static_cast<int>(LineTable::Order::kWritten)] > 0);
      CHECK(c.byOrder[static_cast<int>(LineTable::Order::kSequences)] > 0);
      CHECK(c.byOrder[static_cast<int>(LineTable::Order::kSorted)] > 0);
    }
  }
}
