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
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "heapman/logformat/records.h"

namespace heapman::replay {

// One source-level frame. An instruction address maps to one or more of them: the functions
// inlined at that address, innermost first, then the function the code was compiled into.
struct SourceFrame {
  std::string function;  // demangled ("ns::Class::method(int)"); empty when unknown
  std::string file;      // source path as DWARF names it; empty when unknown
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
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace heapman::replay
