// One thread's libdw session: modules reported into its own Dwfl on first use, DWARF function
// trees and symbol tables built once per CU / module and kept for later addresses. The names in
// the frames it fills point into its own maps: it lives as long as the Symbolizer.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "heapman/replay/symbolizer.h"

namespace heapman::replay::detail {

// A module as the workers see it; read-only while they run.
struct ModuleFile {
  std::string path;  // after the path maps
  uint64_t base = 0;
  bool checked = false;
  std::string problem;  // non-empty: don't open the file
};

class Resolver {
 public:
  // `callbacks` must outlive the resolver (it is shared by all of them). Construct on the
  // Symbolizer's thread; afterwards the resolver may move to one worker thread at a time.
  explicit Resolver(const Dwfl_Callbacks* callbacks);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Fills out.frames (and out.problem when nothing is known) for `address` (a return address)
  // in module `index`, whose file passed checkModuleFile(). Precondition: the module covers it.
  void resolve(int32_t index, const ModuleFile& file, uint64_t address, Symbolized& out);

  // Compile units whose function trees RawCu read / libdw's DIE functions walked so far.
  uint64_t unitsRead() const { return unitsRead_; }
  uint64_t unitsWalked() const { return unitsWalked_; }
  // Line tables LineTable read / left to libdw's dwarf_getsrclines so far.
  uint64_t linesRead() const { return linesRead_; }
  uint64_t linesLibdw() const { return linesLibdw_; }

 private:
  struct CuTable;
  struct Symbol;
  struct Module;

  Module& module(int32_t index, const ModuleFile& file);
  CuTable& cuTable(Module& m, Dwarf_Die* cudie);
  const Symbol* symbolAt(Module& m, uint64_t address);
  const std::string& functionName(Module& m, CuTable& cu, int32_t node, uint64_t bias);
  const std::string& lookUpName(Module& m, CuTable& cu, int32_t node, uint64_t bias);
  std::string qualifiedName(CuTable& cu, Dwarf_Die* named, bool c);
  const std::string& demangled(const char* name);
  const std::string& fileName(const char* name);
  void sourceLine(Module& m, CuTable& cu, uint64_t a, SourceFrame& out);
  const std::string* callFileName(Module& m, CuTable& cu, uint32_t index);
  bool ownLines(Module& m, CuTable& cu);

  Dwfl* dwfl_ = nullptr;
  bool rawAllowed_ = true;  // false with HEAPMAN_SYMBOLS_LIBDW=1
  uint64_t unitsRead_ = 0, unitsWalked_ = 0;
  uint64_t linesRead_ = 0, linesLibdw_ = 0;
  std::vector<std::unique_ptr<Module>> modules_;  // by module index
  // Keyed by the string's address inside the mapped debug sections: each distinct string is
  // demangled once per thread, whatever CU or module names it.
  std::unordered_map<const char*, std::string> names_;
  // Source file names by libdw's string (one per CU's file table, alive as long as the Dwfl):
  // the frames share these copies. (LineTable's names are shared from the table itself.)
  std::unordered_map<const char*, std::string> files_;
  // Functions without a linkage name (static, anonymous namespace, C): out-of-line
  // C++ ones by their DIE (named after their symbol), the others by the DIE that has the name.
  // Two maps: one DIE can be both, and its name must not depend on which came first.
  std::unordered_map<const void*, std::string> unlinkedRoots_;
  std::unordered_map<const void*, std::string> unlinked_;
};

}  // namespace heapman::replay::detail
