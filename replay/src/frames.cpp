#include "heapman/replay/frames.h"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_set>

#ifdef HEAPMAN_HAVE_SYMBOLIZER
#include "heapman/replay/symbolizer.h"
#else
namespace heapman::replay {
class Symbolizer {};
}  // namespace heapman::replay
#endif

namespace heapman::replay {

namespace {

std::string baseName(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

#ifdef HEAPMAN_HAVE_SYMBOLIZER
// The file name of the module a symbolized address lies in ("" when in none).
std::string moduleOf(const Symbolizer& sym, const Symbolized& s) {
  return s.module >= 0 && static_cast<size_t>(s.module) < sym.modules().size()
             ? baseName(sym.modules()[static_cast<size_t>(s.module)].path)
             : "";
}
#endif

}  // namespace

std::string NamedFrame::location() const {
  if (file.empty()) return "";
  return line ? file + ":" + std::to_string(line) : file;
}

// ---- FrameNamer ---------------------------------------------------------------------------------

FrameNamer::FrameNamer(const LogTables& tables, bool symbolize, const LogCode* code)
    : FrameNamer(tables, SymbolSettings{.symbolize = symbolize}, code) {}

FrameNamer::FrameNamer(const LogTables& tables, const SymbolSettings& settings,
                       const LogCode* code)
    : t_(tables), code_(code), settings_(settings) {
  makeSymbolizer();
  sync();
}

void FrameNamer::makeSymbolizer() {
  naming_.clear();
#ifdef HEAPMAN_HAVE_SYMBOLIZER
  if (!settings_.symbolize) return;
  SymbolizerOptions o;
  o.debugDirs = settings_.debugDirs;
  o.pathMaps = settings_.pathMaps;
  sym_ = std::make_unique<Symbolizer>(std::move(o));
#endif
}

// The tables of a lazily indexed replay grow as its pass goes on (Replay::indexed()): modules
// and JIT ranges recorded since are taken in. Names already given stay (a module loaded later
// over the same addresses names the frames after it, not those before).
void FrameNamer::sync() {
  if (modules().size() == modulesSeen_ && jitRanges().size() == jitSeen_) return;
  if (modules().size() < modulesSeen_ || jitRanges().size() < jitSeen_) {  // tables rebuilt
    cache_.clear();
    makeSymbolizer();
    modulesSeen_ = 0;
  }
  if (jitRanges().size() != jitSeen_) {
    // By start; of ranges starting at one address the last recorded wins (code memory reused).
    jitByStart_.clear();
    for (size_t i = 0; i < jitRanges().size(); ++i)
      jitByStart_.push_back({jitRanges()[i].codeStart, i});
    std::stable_sort(jitByStart_.begin(), jitByStart_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    jitSeen_ = jitRanges().size();
  }
#ifdef HEAPMAN_HAVE_SYMBOLIZER
  if (sym_)
    for (size_t i = modulesSeen_; i < modules().size(); ++i) sym_->addModule(modules()[i]);
#endif
  modulesSeen_ = modules().size();
}

FrameNamer::~FrameNamer() = default;

bool FrameNamer::symbolizing() const { return sym_ != nullptr; }

const log::JitRange* FrameNamer::jitRange(uint64_t address) const {
  auto it = std::upper_bound(jitByStart_.begin(), jitByStart_.end(), address,
                             [](uint64_t a, const std::pair<uint64_t, size_t>& e) { return a < e.first; });
  if (it == jitByStart_.begin()) return nullptr;
  const log::JitRange& j = jitRanges()[(it - 1)->second];
  return address - j.codeStart < j.codeSize ? &j : nullptr;
}

void FrameNamer::prepare(const std::vector<uint32_t>& stackIds) {
  sync();
#ifdef HEAPMAN_HAVE_SYMBOLIZER
  if (!sym_) return;
  std::unordered_set<uint64_t> seen;
  std::vector<uint64_t> addresses;
  std::unordered_set<uint32_t> nodes;
  for (uint32_t s : stackIds) {
    for (uint32_t id = s; id != 0 && id < t_.stacks.size(); id = t_.stacks[id].parent) {
      if (!nodes.insert(id).second) break;  // the rest of this chain is known
      const StackNodeDef& n = t_.stacks[id];
      if (!n.managed && !cache_.count(id) && !jitRange(n.frame) && seen.insert(n.frame).second)
        addresses.push_back(n.frame);
    }
  }
  if (!addresses.empty()) sym_->resolveAll(addresses);
#else
  (void)stackIds;
#endif
}

std::vector<NamedFrame> FrameNamer::nativeFallback(uint64_t address) const {
  if (const log::JitRange* j = jitRange(address)) {  // Mono's JIT code
    auto m = methods().find(j->methodId);
    return {NamedFrame{m != methods().end() ? m->second : "method#" + std::to_string(j->methodId),
                       "[jit]", "", 0}};
  }
  // The last module loaded over the address, as the Symbolizer would pick it.
  for (auto it = modules().rbegin(); it != modules().rend(); ++it) {
    if (address >= it->base && address - it->base < it->size) {
      std::string mod = baseName(it->path);
      return {NamedFrame{mod + "+" + hex(address - it->base), mod, "", 0}};
    }
  }
  return {NamedFrame{hex(address), "", "", 0}};
}

const std::vector<NamedFrame>& FrameNamer::frames(uint32_t nodeId) {
  sync();
  auto it = cache_.find(nodeId);
  if (it != cache_.end()) return it->second;
  std::vector<NamedFrame> out;
  if (nodeId >= t_.stacks.size() || !t_.stacks[nodeId].defined) {
    out.push_back({"stack#" + std::to_string(nodeId), "", "", 0});
  } else if (const StackNodeDef& n = t_.stacks[nodeId]; n.managed) {
    auto m = methods().find(static_cast<uint32_t>(n.frame));
    out.push_back({m != methods().end() ? m->second : "method#" + std::to_string(n.frame),
                   "[managed]", "", 0});
  } else {
    out = nativeFrames(n.frame);
  }
  return cache_.emplace(nodeId, std::move(out)).first->second;
}

std::vector<NamedFrame> FrameNamer::nativeFrames(uint64_t address) {
  std::vector<NamedFrame> out;
  if (jitRange(address)) {
    out = nativeFallback(address);
  } else if (!outside_) {
    outside_ = std::none_of(modules().begin(), modules().end(), [&](const log::ModuleLoad& m) {
      return address >= m.base && address - m.base < m.size;
    });
  }
#ifdef HEAPMAN_HAVE_SYMBOLIZER
  if (sym_ && out.empty()) {
    const Symbolized& s = sym_->resolve(address);
    std::string mod = moduleOf(*sym_, s);
    for (const SourceFrame& f : s.frames)
      out.push_back({f.function.empty() ? s.label() : f.function, mod, f.file, f.line});
    if (out.empty()) out.push_back({s.label(), mod, "", 0});
    if (s.module >= 0) {
      ModuleNaming& n =
          naming_.try_emplace(s.module, ModuleNaming{.order = naming_.size()}).first->second;
      bool named = std::any_of(s.frames.begin(), s.frames.end(),
                               [](const SourceFrame& f) { return !f.function.empty(); });
      ++(named ? n.named : n.unnamed);
      if (!named && n.problem.empty()) n.problem = s.problem;
    }
  }
#endif
  if (out.empty()) out = nativeFallback(address);
  return out;
}

std::vector<UnnamedModule> FrameNamer::unnamedModules() const {
  std::vector<std::pair<size_t, UnnamedModule>> found;
#ifdef HEAPMAN_HAVE_SYMBOLIZER
  if (sym_)
    for (const auto& [module, n] : naming_)
      if (n.named == 0 && n.unnamed > 0 && static_cast<size_t>(module) < sym_->modules().size())
        found.push_back({n.order, {sym_->modules()[static_cast<size_t>(module)].path,
                                   n.problem.empty() ? "no symbol covers its addresses" : n.problem,
                                   n.unnamed}});
#endif
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<UnnamedModule> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::vector<NamedFrame> FrameNamer::codeAt(uint64_t address) {
  sync();
  if (jitRange(address)) return nativeFallback(address);
  std::vector<NamedFrame> out;
#ifdef HEAPMAN_HAVE_SYMBOLIZER
  // Only what the symbol tables place in a function: a word that points into a module's data
  // is no return address.
  if (sym_)
    for (const log::ModuleLoad& m : modules())
      if (address >= m.base && address - m.base < m.size) {
        const Symbolized& s = sym_->resolve(address);
        std::string mod = moduleOf(*sym_, s);
        for (const SourceFrame& f : s.frames)
          if (!f.function.empty()) out.push_back({f.function, mod, f.file, f.line});
        break;
      }
#else
  (void)address;
#endif
  return out;
}

// ---- Regex, Exclusions ---------------------------------------------------------------------------

namespace {

RE2::Options regexOptions() {
  RE2::Options o;
  o.set_log_errors(false);  // errors are reported by compileRegex, never on stderr by RE2
  o.set_encoding(RE2::Options::EncodingLatin1);  // byte-wise, like std::regex on std::string
  return o;
}

// Why RE2 refused a pattern. Its parser's messages, except an unbalanced ( ) or [ ], which keep
// the words std::regex used (scripts and the golden tests read them), and the Perl syntax RE2
// leaves out on purpose (it would need backtracking), which says so.
std::string whyRefused(const RE2& re) {
  const std::string& arg = re.error_arg();
  switch (re.error_code()) {
    case RE2::ErrorMissingParen:
    case RE2::ErrorUnexpectedParen:
      return "Mismatched '(' and ')' in regular expression";
    case RE2::ErrorMissingBracket:
      return "Mismatched '[' and ']' in regular expression";
    case RE2::ErrorBadEscape:
      if (arg.size() == 2 && ((arg[1] >= '1' && arg[1] <= '9') || arg[1] == 'k'))
        return "backreference " + arg + " is not supported: heapman uses RE2 syntax: no " +
               "backreferences or lookaround";
      return re.error() + " (heapman uses RE2 syntax)";
    case RE2::ErrorBadPerlOp:
      if (arg == "(?=" || arg == "(?!" || arg == "(?<")
        return "lookaround " + arg + " is not supported: heapman uses RE2 syntax: no " +
               "backreferences or lookaround";
      return re.error() + " (heapman uses RE2 syntax)";
    default:
      return re.error();
  }
}

}  // namespace

bool Regex::search(std::string_view text) const {
  return re_ && RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

Regex compileRegex(const std::string& pattern, const std::string& where,
                   const std::string& kind) {
  std::string prefix = (where.empty() ? "" : where + ": ") + "bad " + (kind.empty() ? "" : kind + " ");
  std::string shown = pattern.size() > 80 ? pattern.substr(0, 77) + "..." : pattern;
  if (pattern.size() > kMaxRegexLength)
    throw ReplayError(prefix + "regex '" + shown + "': it is " + std::to_string(pattern.size()) +
                      " characters long, at most " + std::to_string(kMaxRegexLength) +
                      " are accepted (match a distinctive part of the name instead)");
  auto re = std::make_shared<const RE2>(pattern, regexOptions());
  if (!re->ok()) throw ReplayError(prefix + "regex '" + shown + "': " + whyRefused(*re));
  Regex r;
  r.re_ = std::move(re);
  return r;
}

struct Exclusions::Compiled {
  RE2::Set set{regexOptions(), RE2::UNANCHORED};
  // Each pattern alone: what matches when the set's DFA runs out of memory (RE2::Set then fails
  // rather than fall back to a slower engine).
  std::vector<Regex> each;
};

Exclusions Exclusions::fromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ReplayError("cannot read exclusion file " + path);
  return fromStream(in, path);
}

Exclusions Exclusions::fromText(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  return fromStream(in, name);
}

Exclusions Exclusions::fromStream(std::istream& in, const std::string& name) {
  Exclusions e;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    size_t end = line.find_last_not_of(" \t\r");
    e.check(line.substr(b, end - b + 1), name + ":" + std::to_string(n));
  }
  e.compile();
  return e;
}

void Exclusions::check(const std::string& regex, const std::string& where) {
  res_.push_back(compileRegex(regex, where));  // throws, naming the pattern, before any change
  texts_.push_back(regex);
}

void Exclusions::compile() {
  set_.reset();
  if (texts_.empty()) return;
  auto c = std::make_shared<Compiled>();
  for (const std::string& t : texts_) {
    std::string err;
    if (c->set.Add(t, &err) < 0) throw ReplayError("bad regex '" + t + "': " + err);
  }
  c->each = res_;
  if (!c->set.Compile())
    throw ReplayError("the " + std::to_string(texts_.size()) +
                      " leaf-exclusion regexes together exceed RE2's memory budget; use fewer");
  set_ = std::move(c);
}

void Exclusions::add(const std::string& regex, const std::string& where) {
  check(regex, where);
  compile();
}

bool Exclusions::excluded(std::string_view name) const {
  if (!set_) return false;
  re2::StringPiece text(name.data(), name.size());
  RE2::Set::ErrorInfo err{};
  if (set_->set.Match(text, nullptr, &err)) return true;
  if (err.kind == RE2::Set::kNoError) return false;
  for (const Regex& r : set_->each)
    if (r.search(name)) return true;
  return false;
}

bool Exclusions::excluded(const NamedFrame& f) const {
  return excluded(f.function) || (!f.module.empty() && excluded(f.module));
}

// ---- Attribution --------------------------------------------------------------------------------

Attribution::Attribution(const LogTables& tables, FrameNamer& namer, const Exclusions& exclusions)
    : t_(tables), namer_(namer), ex_(exclusions) {}

void Attribution::prepareInfos(const std::vector<uint32_t>& infoIds) {
  std::vector<uint32_t> stacks;
  std::unordered_set<uint32_t> seen;
  for (uint32_t i : infoIds)
    if (i < t_.infos.size() && seen.insert(t_.infos[i].stackId).second)
      stacks.push_back(t_.infos[i].stackId);
  namer_.prepare(stacks);
}

uint32_t Attribution::siteOf(uint32_t stackId) {
  auto it = byStack_.find(stackId);
  if (it != byStack_.end()) return it->second;
  Site s;
  const NamedFrame* chosen = nullptr;
  const NamedFrame* leaf = nullptr;
  for (uint32_t node : t_.stackNodes(stackId)) {
    const std::vector<NamedFrame>& fs = namer_.frames(node);
    if (!leaf) leaf = &fs.front();
    if (uint32_t k = firstKept(node); k != kAllExcluded) {
      chosen = &fs[k];
      break;
    }
  }
  if (!chosen) chosen = leaf;
  if (chosen) {
    s = {chosen->function, chosen->module, chosen->location()};
  } else {
    s = {"(no stack)", "", ""};
  }
  std::string key = s.function + '\0' + s.module;
  auto [k, fresh] = siteIds_.emplace(key, static_cast<uint32_t>(sites_.size()));
  if (fresh) sites_.push_back(s);
  byStack_.emplace(stackId, k->second);
  return k->second;
}

uint32_t Attribution::firstKept(uint32_t node) {
  auto [it, fresh] = firstKept_.try_emplace(node, kAllExcluded);
  if (fresh) {
    const std::vector<NamedFrame>& fs = namer_.frames(node);
    for (size_t i = 0; i < fs.size(); ++i)
      if (!ex_.excluded(fs[i])) {
        it->second = static_cast<uint32_t>(i);
        break;
      }
  }
  return it->second;
}

std::string Attribution::folded(uint32_t stackId) {
  std::vector<uint32_t> nodes = t_.stackNodes(stackId);
  std::string out;
  for (auto n = nodes.rbegin(); n != nodes.rend(); ++n) {
    const auto& fs = namer_.frames(*n);
    for (auto f = fs.rbegin(); f != fs.rend(); ++f) {
      std::string name = f->function;
      std::replace(name.begin(), name.end(), ';', ':');  // ';' separates frames
      out += (out.empty() ? "" : ";") + name;
    }
  }
  return out.empty() ? "(no stack)" : out;
}

}  // namespace heapman::replay
