// Names for the frames of a log's stacks, and the blame attribution of a stack.
//
// FrameNamer: native frames through the Symbolizer (DWARF, demangled, file:line, inlined frames
// expanded innermost first), resolved in one batch per query (prepare()); managed frames from the
// log's MethodDefs, and native frames inside Mono JIT code (JitRange) as their method (module
// "[jit]"); frames nothing knows as module+0xoffset or 0xaddress, never an error.
//
// Exclusions: the leaf-exclusion list (RE2 regexes, one a line, '#' comments). A source frame is
// excluded when a regex matches anywhere in its function name or in its module's file name. All
// of them are compiled into one RE2::Set: a name is scanned once, whatever the number of patterns.
//
// Attribution: charges a stack to its first source frame, from the leaf, that no exclusion
// matches (every frame excluded: the leaf; the empty stack: "(no stack)"). Sites are identified by
// (function, module); cached per stack id, and each stack node's verdict (which of its frames is
// the first that no exclusion matches) per node id, so a frame is matched once per query.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string_view>
#include <string>
#include <unordered_map>
#include <vector>

#include "heapman/replay/replay.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace heapman::replay {

class Symbolizer;

// How native frames are named, and where a log recorded on another machine (or in another root)
// finds its modules' files and their separate debug files.
struct SymbolSettings {
  bool symbolize = true;  // false: module+offset names only, no DWARF or symbol-table lookups
  std::vector<std::string> debugDirs;  // looked in first for DIR/.build-id/xx/rest.debug
  // A module path starting with `first` is looked up with that prefix replaced by `second`.
  std::vector<std::pair<std::string, std::string>> pathMaps;
};

// A module whose frames an answer named, none by a function (module+0xoffset each), and why.
struct UnnamedModule {
  std::string path;     // as recorded
  // "module file not found", "build id differs", "no debug info and no symbol", ...
  std::string problem;
  uint64_t frames = 0;  // stack frames named so
};

struct NamedFrame {
  std::string function;  // demangled name, method name, or module+0xoffset / 0xaddress
  std::string module;    // file name of the module ("[managed]" for managed frames; "" unknown)
  std::string file;      // source file; "" unknown
  uint32_t line = 0;
  std::string location() const;  // "file:line", "file", or ""
};

class FrameNamer {
 public:
  // symbolize = false: no DWARF lookups (module+offset names only). `code`: the whole log's
  // code records while `tables` hold a prefix of it (Replay::codeAhead()), else null: modules,
  // JIT ranges and methods are then `tables`'.
  FrameNamer(const LogTables& tables, bool symbolize = true, const LogCode* code = nullptr);
  FrameNamer(const LogTables& tables, const SymbolSettings& settings,
             const LogCode* code = nullptr);
  ~FrameNamer();
  FrameNamer(const FrameNamer&) = delete;
  FrameNamer& operator=(const FrameNamer&) = delete;

  // Resolves the native frames of these stacks in one batch (cheap for frames already known).
  void prepare(const std::vector<uint32_t>& stackIds);
  // The source frames of one stack node, innermost first; at least one.
  const std::vector<NamedFrame>& frames(uint32_t nodeId);
  // The source frames of a code address (a return address found in a thread's stack), innermost
  // first; empty when no module or JIT range holds it.
  std::vector<NamedFrame> codeAt(uint64_t address);
  bool symbolizing() const;
  // Whether a native frame it named lay outside every module the tables hold: a prefix of the
  // log (Replay::indexed() false) may lack the module's load, which can come after allocations
  // its code made (a library's constructors during dlopen, a module found by the recorder's
  // rescan), so the whole log could name that frame otherwise. (Not so with `code`: it holds
  // every module of the log.)
  bool namedOutsideModules() const { return outside_; }
  // The modules whose frames were named so far (frames(), codeAt()) without one function name
  // among them, in the order first met: what a user needs to be told (a module some of whose
  // addresses no symbol covers, like libc's static functions, is not one of them).
  std::vector<UnnamedModule> unnamedModules() const;

 private:
  const LogTables& t_;
  const LogCode* code_;
  const std::unordered_map<uint32_t, std::string>& methods() const {
    return code_ ? code_->methods : t_.methods;
  }
  const std::vector<log::ModuleLoad>& modules() const { return code_ ? code_->modules : t_.modules; }
  const std::vector<log::JitRange>& jitRanges() const {
    return code_ ? code_->jitRanges : t_.jitRanges;
  }
  SymbolSettings settings_;
  size_t modulesSeen_ = 0, jitSeen_ = 0;  // of t_'s, taken in
  bool outside_ = false;
  std::unique_ptr<Symbolizer> sym_;
  std::unordered_map<uint32_t, std::vector<NamedFrame>> cache_;
  void sync();
  std::vector<NamedFrame> nativeFallback(uint64_t address) const;
  std::vector<NamedFrame> nativeFrames(uint64_t address);
  const log::JitRange* jitRange(uint64_t address) const;
  std::vector<std::pair<uint64_t, size_t>> jitByStart_;  // (code start, index in jitRanges)
  // Per module index of the Symbolizer: addresses named by a function, and those not (with the
  // first problem given).
  struct ModuleNaming {
    uint64_t named = 0, unnamed = 0;
    std::string problem;
    size_t order = 0;
  };
  std::unordered_map<int32_t, ModuleNaming> naming_;
  void makeSymbolizer();
};

// A user's regex (exclusions, --type, --function) in RE2 syntax, byte-wise (Latin-1, as
// std::regex read them before), searched anywhere in a name (RE2::PartialMatch). RE2 matches in
// time linear in the name, with no recursion: no pattern can overflow the stack or backtrack
// exponentially. It has no backreferences and no lookaround; such a pattern is refused.
// Copies share one compiled program (matching is thread-safe).
class Regex {
 public:
  Regex() = default;  // matches nothing
  bool search(std::string_view text) const;

 private:
  friend Regex compileRegex(const std::string&, const std::string&, const std::string&);
  std::shared_ptr<const re2::RE2> re_;
};

// Compiles a user's regex. Refuses (ReplayError) a pattern longer than kMaxRegexLength characters
// or that RE2 cannot compile (repeats are capped at {1000} and a program at RE2's memory budget,
// so no pattern can blow up).
inline constexpr size_t kMaxRegexLength = 1000;
// `where` ("FILE:LINE", "--exclude-add", or "") and `kind` ("type", "function", or "") name it in
// errors: "WHERE: bad KIND regex 'R': why".
Regex compileRegex(const std::string& pattern, const std::string& where,
                   const std::string& kind = "");

class Exclusions {
 public:
  // Reads a file; throws ReplayError "FILE:LINE: bad regex 'R': why" or "cannot read FILE".
  static Exclusions fromFile(const std::string& path);
  // The same from a file's text; `name` stands for the file in errors.
  static Exclusions fromText(const std::string& text, const std::string& name);
  // Adds one regex; `where` names it in errors ("--exclude-add"). Recompiles the set: meant for
  // a few patterns (fromFile compiles a file's once).
  void add(const std::string& regex, const std::string& where);
  bool excluded(const NamedFrame& f) const;
  bool excluded(std::string_view name) const;  // a function or module name
  size_t size() const { return texts_.size(); }
  const std::vector<std::string>& patterns() const { return texts_; }

 private:
  static Exclusions fromStream(std::istream& in, const std::string& name);
  struct Compiled;
  void check(const std::string& regex, const std::string& where);
  void compile();
  std::shared_ptr<const Compiled> set_;  // null: no patterns
  std::vector<std::string> texts_;
  std::vector<Regex> res_;  // texts_ compiled one by one
};

struct Site {
  std::string function, module, location;
};

class Attribution {
 public:
  Attribution(const LogTables& tables, FrameNamer& namer, const Exclusions& exclusions);
  // Symbolizes the stacks of these infos in one batch (call before siteOf for them).
  void prepareInfos(const std::vector<uint32_t>& infoIds);
  // The site a stack is charged to: an index into sites().
  uint32_t siteOf(uint32_t stackId);
  const Site& site(uint32_t id) const { return sites_[id]; }
  size_t siteCount() const { return sites_.size(); }
  FrameNamer& namer() { return namer_; }
  const Exclusions& exclusions() const { return ex_; }
  const LogTables& tables() const { return t_; }
  // Root-first names of a stack's source frames ("main;Game::update;malloc").
  std::string folded(uint32_t stackId);

 private:
  const LogTables& t_;
  FrameNamer& namer_;
  const Exclusions& ex_;
  std::vector<Site> sites_;
  std::unordered_map<std::string, uint32_t> siteIds_;
  std::unordered_map<uint32_t, uint32_t> byStack_;
  // Per stack node: the index in namer_.frames(node) of its first frame no exclusion matches,
  // or kAllExcluded.
  static constexpr uint32_t kAllExcluded = ~0u;
  std::unordered_map<uint32_t, uint32_t> firstKept_;
  uint32_t firstKept(uint32_t node);
};

}  // namespace heapman::replay
