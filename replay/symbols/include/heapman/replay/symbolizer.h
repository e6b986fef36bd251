// Symbolizer: turns the native instruction addresses of a log's stacks into functions, source
// files and lines, offline, from the modules the log recorded (ModuleLoad: path, load bias,
// PT_LOAD segments, GNU build id) and their DWARF (elfutils libdw; separate debug files found by
// build id under the standard debug directories).
//
// Stack frames in a log are return addresses (the recorder walks frames; every recorded frame
// is a caller), so the function and line are looked up at address - 1, which lies inside the call
// instruction; results are keyed by the address as recorded.
//
// Each unique address is resolved once and cached; resolveAll() spreads a batch over threads
// (one libdw session per thread: a Dwfl is not thread-safe). An address no module covers, a
// module file that is missing or whose build id differs from the recorded one, or a module
// without symbols gives a Symbolized with module+offset and no function name: never an error.
//
// Threads: construct, addModule() and resolveAll() from one thread; lookup() and resolve() after
// the last resolveAll() may be called from any thread for addresses already resolved.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "heapman/logformat/records.h"

namespace heapman::replay {

// A function or file name as the symbolizer hands it out: one string shared by every frame that
// names it, kept by the Symbolizer that made it (a demangled C++ name runs to hundreds of bytes,
// and 400 000 addresses of a C++ program have 1.3 M frames: a copy each was most of the cost).
// It reads as a const std::string&; one made from a C string (a test's expected frame) owns a
// copy. Lifetime: a name from a Symbolizer lives as long as that Symbolizer.
class SymbolName {
 public:
  SymbolName() = default;
  SymbolName(const char* s);  // NOLINT: implicit, as a std::string member was (owns a copy)
  explicit SymbolName(std::string s);
  // Refers to `s` without copying; `s` must outlive the name and every copy of it.
  static SymbolName shared(const std::string& s) {
    SymbolName n;
    n.p_ = &s;
    return n;
  }

  const std::string& str() const { return p_ ? *p_ : kEmpty; }
  operator const std::string&() const { return str(); }  // NOLINT: reads as the string
  bool empty() const { return str().empty(); }
  size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }

  friend bool operator==(const SymbolName& a, const SymbolName& b) {
    return a.p_ == b.p_ || a.str() == b.str();
  }
  friend bool operator==(const SymbolName& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SymbolName& a, const char* b) { return a.str() == b; }
  friend std::string operator+(const SymbolName& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const SymbolName& b) { return a + b.str(); }
  friend std::string operator+(const SymbolName& a, const char* b) { return a.str() + b; }
  friend std::string operator+(const char* a, const SymbolName& b) { return a + b.str(); }
  friend std::ostream& operator<<(std::ostream& out, const SymbolName& n);

 private:
  static const std::string kEmpty;
  const std::string* p_ = nullptr;          // nullptr: empty
  std::shared_ptr<const std::string> own_;  // set when the name owns its string
};

// One source-level frame. An instruction address maps to one or more of them: the functions
// inlined at that address, innermost first, then the function the code was compiled into.
struct SourceFrame {
  SymbolName function;  // demangled ("ns::Class::method(int)"); empty when unknown
  SymbolName file;      // source path as DWARF names it; empty when unknown
  uint32_t line = 0;     // 0 when unknown
  bool operator==(const SourceFrame&) const = default;
};

struct Symbolized {
  uint64_t address = 0;
  int32_t module = -1;        // index into Symbolizer::modules(); -1 when no module covers it
  uint64_t moduleOffset = 0;  // address - load bias (the ELF virtual address in the file)
  std::vector<SourceFrame> frames;  // innermost first; empty when nothing is known
  std::string problem;  // why symbols are missing ("module file not found", "build id differs")
  std::string moduleName;  // file name of the module's path (no directory); empty without module

  // "function" of the outermost frame, else "module+0xoffset", else "0xaddress".
  std::string label() const;
  bool operator==(const Symbolized&) const = default;
};

struct SymbolizerOptions {
  unsigned threads = 0;                // 0: one per hardware thread
  std::vector<std::string> debugDirs;  // extra places for separate debug files (before the standard ones)
  // Path prefix rewriting for logs recorded on another machine or in another root: a module path
  // starting with `from` is looked up with that prefix replaced by `to`.
  std::vector<std::pair<std::string, std::string>> pathMaps;
};

class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // A module as the log recorded it. A later module whose ranges overlap an earlier one (a
  // library loaded where an unloaded one was) takes those addresses for itself. Results cached
  // before the call stay as they were (one answer per address): add the modules first.
  void addModule(const log::ModuleLoad& module);
  const std::vector<log::ModuleLoad>& modules() const;

  // Resolves every address not yet resolved, in parallel. Cheap for addresses already known.
  void resolveAll(std::span<const uint64_t> addresses);
  // The cached result for an address resolveAll() has seen; nullptr otherwise.
  const Symbolized* lookup(uint64_t address) const;
  // lookup(), resolving on the calling thread when not cached (single-threaded use only).
  const Symbolized& resolve(uint64_t address);

  struct Stats {
    uint64_t resolved = 0;     // unique addresses
    uint64_t withFunction = 0; // of which a function name was found
    uint64_t withLine = 0;     // of which a source line was found
    double seconds = 0;        // wall time spent in resolveAll()
    // Compile units whose function trees were read from their DIE bytes directly / walked
    // through libdw's DIE functions (a unit the direct reader can't read, or all of them with
    // HEAPMAN_SYMBOLS_LIBDW=1 in the environment: the slower walk, to compare answers). Summed
    // over the workers' sessions: a unit two workers met counts twice.
    uint64_t unitsRead = 0;
    uint64_t unitsWalked = 0;
    // Compile units whose line tables were read directly / through libdw's dwarf_getsrclines
    // (a table the direct reader can't read, or all with HEAPMAN_SYMBOLS_LIBDW=1); summed the
    // same way.
    uint64_t linesRead = 0;
    uint64_t linesLibdw = 0;
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapman::replay
