#include "resolver.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

#include "line_table.h"
#include "raw_cu.h"

namespace heapman::replay::detail {

namespace {

constexpr uint32_t kNoFile = std::numeric_limits<uint32_t>::max();
// Function trees nest this deep at most (malformed DWARF could loop or nest without end).
constexpr int kMaxDepth = 128;
// A node with this many inlined copies directly inside gets its children's ranges sorted for a
// binary search (a large function can have hundreds); fewer are scanned.
constexpr size_t kIndexChildren = 8;

}  // namespace

// The functions of one compile unit with code: concrete subprograms (the roots, found by
// binary search over their ranges) and, under each, the inlined subroutines as a tree.
struct Resolver::CuTable {
  struct Node {
    Dwarf_Die die;
    int32_t parent = -1;          // enclosing subprogram / inlined subroutine; -1 for a root
    uint32_t callFile = kNoFile;  // where this inlined copy was called from (index into files)
    uint32_t callLine = 0;
    uint32_t rangesBegin = 0, rangesEnd = 0;  // into ranges
    // The inlined subroutines directly inside, in DIE order, as a list through the nodes (no
    // allocation of its own per node): -1 ends it.
    int32_t firstChild = -1, lastChild = -1, nextSibling = -1;
    // Into childRanges: its children's ranges by address when indexChildren() made them
    // (empty: scan the children).
    uint32_t childRangesBegin = 0, childRangesEnd = 0;
    const std::string* name = nullptr;        // once known (owned by the Resolver's name maps)
  };
  struct Root {
    uint64_t lo, hi;
    int32_t node;
  };
  struct ChildRange {
    uint64_t lo, hi;
    int32_t child;
  };

  Dwarf_Die cudie;
  std::unique_ptr<RawCu> raw;  // the unit's DIEs read directly; nullptr when RawCu can't
  std::vector<Node> nodes;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::vector<Root> roots;  // sorted by lo
  std::vector<ChildRange> childRanges;
  Dwarf_Files* files = nullptr;
  size_t fileCount = 0;
  bool filesLoaded = false;
  // The unit's line table read by LineTable (linesState 1) or left to libdw (2); 0: not yet.
  int linesState = 0;
  LineTable lines;

  bool contains(const Node& n, uint64_t a) const {
    for (uint32_t i = n.rangesBegin; i < n.rangesEnd; ++i)
      if (a >= ranges[i].first && a < ranges[i].second) return true;
    return false;
  }

  // Adds `die` when it has code; returns its node index or -1. `raw`: the DIE as RawCu read it
  // (its range and call site already known when in plain forms).
  int32_t add(Dwarf_Die* die, int32_t parent, const RawCu::Die* raw = nullptr) {
    auto begin = static_cast<uint32_t>(ranges.size());
    if (raw && raw->lowHigh) {
      if (raw->lo < raw->hi) ranges.emplace_back(raw->lo, raw->hi);
    } else if (!raw || raw->ranges) {
      Dwarf_Addr base, start, end;
      ptrdiff_t off = 0;
      while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0)
        if (start < end) ranges.emplace_back(start, end);
    }
    if (ranges.size() == begin) return -1;
    Node n;
    n.die = *die;
    n.parent = parent;
    n.rangesBegin = begin;
    n.rangesEnd = static_cast<uint32_t>(ranges.size());
    auto idx = static_cast<int32_t>(nodes.size());
    if (parent >= 0) {
      auto known = [die](int state, uint64_t rawValue, unsigned name, Dwarf_Word& v) {
        if (state == 1) {
          v = rawValue;
          return true;
        }
        Dwarf_Attribute attr;
        return state != 0 && dwarf_formudata(dwarf_attr(die, name, &attr), &v) == 0;
      };
      Dwarf_Word v;
      if (known(raw ? raw->callFileState : 2, raw ? raw->callFile : 0, DW_AT_call_file, v) &&
          v < kNoFile)
        n.callFile = static_cast<uint32_t>(v);
      if (known(raw ? raw->callLineState : 2, raw ? raw->callLine : 0, DW_AT_call_line, v) &&
          v <= std::numeric_limits<uint32_t>::max())
        n.callLine = static_cast<uint32_t>(v);
      Node& p = nodes[static_cast<size_t>(parent)];
      if (p.lastChild < 0)
        p.firstChild = idx;
      else
        nodes[static_cast<size_t>(p.lastChild)].nextSibling = idx;
      p.lastChild = idx;
    } else {
      for (uint32_t i = n.rangesBegin; i < n.rangesEnd; ++i)
        roots.push_back({ranges[i].first, ranges[i].second, idx});
    }
    nodes.push_back(std::move(n));
    return idx;
  }

  // walk() over RawCu's reading of the unit: the same tree, without libdw's per-DIE lookups.
  // False when RawCu can't read the unit (the caller starts over with walk()).
  bool walkRaw(const RawCu& raw, const uint8_t* first, int32_t parent, int depth,
               const uint8_t*& after) {
    after = nullptr;
    if (depth > kMaxDepth) return true;
    return raw.walkList(first, after, [&](const RawCu::Die& d, const uint8_t*& childrenEnd) {
      Dwarf_Die die = raw.dwarfDie(d.at);
      switch (d.tag) {
        case DW_TAG_subprogram: {
          int32_t idx = add(&die, -1, &d);
          return idx < 0 || walkRaw(raw, raw.firstChild(d), idx, depth + 1, childrenEnd);
        }
        case DW_TAG_inlined_subroutine: {
          int32_t idx = add(&die, parent, &d);
          return idx < 0 || walkRaw(raw, raw.firstChild(d), idx, depth + 1, childrenEnd);
        }
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
          return walkRaw(raw, raw.firstChild(d), parent, depth + 1, childrenEnd);
        case DW_TAG_namespace:
        case DW_TAG_module:
          return walkRaw(raw, raw.firstChild(d), -1, depth + 1, childrenEnd);
        default:
          return true;
      }
    });
  }

  // Only scopes that can hold code are entered: types, variables and parameters are skipped,
  // which is most of a C++ CU's DIEs.
  void walk(Dwarf_Die* parentDie, int32_t parent, int depth) {
    if (depth > kMaxDepth) return;
    Dwarf_Die child;
    if (dwarf_child(parentDie, &child) != 0) return;
    do {
      switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram: {
          // A nested function has its own code: a root of its own.
          int32_t idx = add(&child, -1);
          if (idx >= 0) walk(&child, idx, depth + 1);
          break;
        }
        case DW_TAG_inlined_subroutine: {
          int32_t idx = add(&child, parent);
          if (idx >= 0) walk(&child, idx, depth + 1);
          break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
          walk(&child, parent, depth + 1);
          break;
        case DW_TAG_namespace:
        case DW_TAG_module:
          walk(&child, -1, depth + 1);
          break;
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // `rawAllowed`: RawCu may read the unit. True when it did.
  bool build(bool rawAllowed) {
    if (rawAllowed) {
      raw = std::make_unique<RawCu>();
      if (!raw->init(&cudie)) raw.reset();
    }
    const uint8_t* after = nullptr;
    bool read = raw && walkRaw(*raw, raw->firstChild(), -1, 0, after);
    if (!read) {
      nodes.clear();
      ranges.clear();
      roots.clear();
      walk(&cudie, -1, 0);
    }
    std::sort(roots.begin(), roots.end(), [](const Root& a, const Root& b) { return a.lo < b.lo; });
    indexChildren();
    return read;
  }

  // Sorts the children's ranges of each node with many children, where they don't overlap: at
  // most one child then holds an address, which a binary search finds (the scan in DIE order
  // finds the first that holds it: the same one). Overlapping children keep the scan.
  void indexChildren() {
    for (Node& n : nodes) {
      size_t count = 0;
      for (int32_t c = n.firstChild; c >= 0 && count < kIndexChildren;
           c = nodes[static_cast<size_t>(c)].nextSibling)
        ++count;
      if (count < kIndexChildren) continue;
      const size_t begin = childRanges.size();
      for (int32_t c = n.firstChild; c >= 0; c = nodes[static_cast<size_t>(c)].nextSibling) {
        const Node& child = nodes[static_cast<size_t>(c)];
        for (uint32_t i = child.rangesBegin; i < child.rangesEnd; ++i)
          childRanges.push_back({ranges[i].first, ranges[i].second, c});
      }
      auto first = childRanges.begin() + static_cast<ptrdiff_t>(begin);
      std::sort(first, childRanges.end(),
                [](const ChildRange& a, const ChildRange& b) { return a.lo < b.lo; });
      bool disjoint = true;
      for (auto it = first + 1; it < childRanges.end() && disjoint; ++it)
        disjoint = (it - 1)->hi <= it->lo;
      if (!disjoint) {
        childRanges.resize(begin);
        continue;
      }
      n.childRangesBegin = static_cast<uint32_t>(begin);
      n.childRangesEnd = static_cast<uint32_t>(childRanges.size());
    }
  }

  // The child of `node` holding `a`, the first in DIE order; -1 when none does.
  int32_t childAt(int32_t node, uint64_t a) const {
    const Node& n = nodes[static_cast<size_t>(node)];
    if (n.childRangesEnd > n.childRangesBegin) {
      auto first = childRanges.begin() + n.childRangesBegin;
      auto it = std::upper_bound(first, childRanges.begin() + n.childRangesEnd, a,
                                 [](uint64_t x, const ChildRange& r) { return x < r.lo; });
      return it != first && a < (it - 1)->hi ? (it - 1)->child : -1;
    }
    for (int32_t c = n.firstChild; c >= 0; c = nodes[static_cast<size_t>(c)].nextSibling)
      if (contains(nodes[static_cast<size_t>(c)], a)) return c;
    return -1;
  }

  // The innermost function or inlined copy at `a`; -1 when no function of this CU has it.
  int32_t innermost(uint64_t a) const {
    auto it = std::upper_bound(roots.begin(), roots.end(), a,
                               [](uint64_t x, const Root& r) { return x < r.lo; });
    int32_t node = -1;
    // Roots don't overlap in well-formed DWARF; look a few back in case they do.
    for (int i = 0; i < 8 && it != roots.begin(); ++i) {
      --it;
      if (a < it->hi) {
        node = it->node;
        break;
      }
    }
    if (node < 0) return -1;
    for (int32_t child; (child = childAt(node, a)) >= 0;) node = child;
    return node;
  }

  // Namespace/class prefix ("ns::Class::") of each subprogram DIE of this CU, found on first
  // need by one walk of the CU's scopes (DWARF has no parent links). The walk only records each
  // scope's name and parent; a prefix string is made when a name asks for it (a C++ CU has
  // thousands of classes from its headers, few of which own a function named this way).
  struct Scope {
    const char* name;  // nullptr: an anonymous namespace
    uint32_t parent;
    bool built = false;
    std::string prefix;
  };
  bool scopesBuilt = false;
  std::vector<Scope> scopes;  // [0]: the CU itself (empty prefix)
  std::vector<std::pair<const void*, uint32_t>> scopeOfDie;  // subprogram DIE -> scope, by DIE

  void buildScopes(Dwarf_Die* parentDie, uint32_t scope, int depth) {
    if (depth > kMaxDepth) return;
    Dwarf_Die child;
    if (dwarf_child(parentDie, &child) != 0) return;
    do {
      int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram) {
        scopeOfDie.emplace_back(child.addr, scope);
      } else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
                 tag == DW_TAG_structure_type || tag == DW_TAG_union_type) {
        const char* name = dwarf_diename(&child);
        if (!name && tag != DW_TAG_namespace) continue;
        scopes.push_back({name, scope});
        buildScopes(&child, static_cast<uint32_t>(scopes.size() - 1), depth + 1);
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // buildScopes() over RawCu's reading (scope names still through libdw).
  bool buildScopesRaw(const RawCu& raw, const uint8_t* first, uint32_t scope, int depth,
                      const uint8_t*& after) {
    after = nullptr;
    if (depth > kMaxDepth) return true;
    return raw.walkList(first, after, [&](const RawCu::Die& d, const uint8_t*& childrenEnd) {
      if (d.tag == DW_TAG_subprogram) {
        scopeOfDie.emplace_back(d.at, scope);
      } else if (d.tag == DW_TAG_namespace || d.tag == DW_TAG_class_type ||
                 d.tag == DW_TAG_structure_type || d.tag == DW_TAG_union_type) {
        Dwarf_Die die = raw.dwarfDie(d.at);
        const char* name = dwarf_diename(&die);
        if (!name && d.tag != DW_TAG_namespace) return true;
        scopes.push_back({name, scope});
        return buildScopesRaw(raw, raw.firstChild(d), static_cast<uint32_t>(scopes.size() - 1),
                              depth + 1, childrenEnd);
      }
      return true;
    });
  }

  const std::string& prefixOf(uint32_t scope) {
    Scope& s = scopes[scope];
    if (!s.built) {
      // Parents come first in the walk, so the recursion is as deep as the nesting.
      std::string p = scope == 0 ? std::string() : prefixOf(s.parent);
      if (scope != 0) p = p + (s.name ? s.name : "(anonymous namespace)") + "::";
      s.prefix = std::move(p);
      s.built = true;
    }
    return s.prefix;
  }

  // Precondition: `die` belongs to this CU. Nullptr when the walk didn't see it.
  const std::string* scopeOf(Dwarf_Die* die) {
    auto byDie = [](const std::pair<const void*, uint32_t>& a,
                    const std::pair<const void*, uint32_t>& b) {
      return std::less<const void*>()(a.first, b.first);
    };
    if (!scopesBuilt) {
      scopesBuilt = true;
      scopes.push_back({nullptr, 0});
      const uint8_t* after = nullptr;
      if (!raw || !buildScopesRaw(*raw, raw->firstChild(), 0, 0, after)) {
        scopes.resize(1);
        scopeOfDie.clear();
        buildScopes(&cudie, 0, 0);
      }
      // A walk in DIE order lists them sorted; malformed sibling links could break that.
      if (!std::is_sorted(scopeOfDie.begin(), scopeOfDie.end(), byDie))
        std::stable_sort(scopeOfDie.begin(), scopeOfDie.end(), byDie);
    }
    auto it = std::lower_bound(scopeOfDie.begin(), scopeOfDie.end(),
                               std::pair<const void*, uint32_t>{die->addr, 0}, byDie);
    if (it == scopeOfDie.end() || it->first != die->addr) return nullptr;
    return &prefixOf(it->second);
  }

  const char* fileName(uint32_t index) {
    if (!filesLoaded) {
      filesLoaded = true;
      if (dwarf_getsrcfiles(&cudie, &files, &fileCount) != 0) files = nullptr;
    }
    if (!files || index == kNoFile || index >= fileCount) return nullptr;
    return dwarf_filesrc(files, index, nullptr, nullptr);
  }
};

struct Resolver::Symbol {
  uint64_t lo, hi;
  const char* name;
  bool global;
};

struct Resolver::Module {
  Dwfl_Module* mod = nullptr;
  std::string problem;  // set when the module could not be reported
  std::unordered_map<const void*, std::unique_ptr<CuTable>> cus;  // by CU DIE address
  CuTable* lastCu = nullptr;
  const void* lastCuKey = nullptr;
  bool symbolsLoaded = false;
  std::vector<Symbol> symbols;  // sized functions, sorted by lo, globals first at one address
  // The sections LineTable reads, of the Dwarf the last unit came from (the module's own, or a
  // supplementary file's).
  Dwarf* lineDbg = nullptr;
  LineSections lineSections;
};

// dwfl_begin() sets libelf's global version: done here, on the thread that owns the Symbolizer,
// not in the workers.
Resolver::Resolver(const Dwfl_Callbacks* callbacks) : dwfl_(dwfl_begin(callbacks)) {
  const char* libdwOnly = std::getenv("HEAPMAN_SYMBOLS_LIBDW");
  rawAllowed_ = !(libdwOnly && std::strcmp(libdwOnly, "1") == 0);
}

Resolver::~Resolver() {
  if (dwfl_) dwfl_end(dwfl_);
}

Resolver::Module& Resolver::module(int32_t index, const ModuleFile& file) {
  auto i = static_cast<size_t>(index);
  if (i >= modules_.size()) modules_.resize(i + 1);
  if (modules_[i]) return *modules_[i];
  modules_[i] = std::make_unique<Module>();
  Module& m = *modules_[i];
  if (!dwfl_) {
    m.problem = std::string("libdw: ") + dwfl_errmsg(-1);
    return m;
  }
  dwfl_report_begin_add(dwfl_);
  // A name of its own per module: libdwfl merges reports with equal name and range.
  std::string name = std::to_string(index) + ":" + file.path;
  m.mod = dwfl_report_elf(dwfl_, name.c_str(), file.path.c_str(), -1, file.base, true);
  if (!m.mod) m.problem = std::string("libdw: ") + dwfl_errmsg(-1);
  dwfl_report_end(dwfl_, nullptr, nullptr);
  return m;
}

Resolver::CuTable& Resolver::cuTable(Module& m, Dwarf_Die* cudie) {
  const void* key = cudie->addr;
  if (key == m.lastCuKey) return *m.lastCu;
  auto& slot = m.cus[key];
  if (!slot) {
    slot = std::make_unique<CuTable>();
    slot->cudie = *cudie;
    ++(slot->build(rawAllowed_) ? unitsRead_ : unitsWalked_);
  }
  m.lastCuKey = key;
  m.lastCu = slot.get();
  return *slot;
}

const Resolver::Symbol* Resolver::symbolAt(Module& m, uint64_t address) {
  if (!m.symbolsLoaded) {
    m.symbolsLoaded = true;
    int n = dwfl_module_getsymtab(m.mod);
    for (int i = 0; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr addr;
      GElf_Word shndx;
      const char* name = dwfl_module_getsym_info(m.mod, i, &sym, &addr, &shndx, nullptr, nullptr);
      int type = GELF_ST_TYPE(sym.st_info);
      if (!name || !*name || sym.st_size == 0 || shndx == SHN_UNDEF ||
          (type != STT_FUNC && type != STT_GNU_IFUNC))
        continue;
      m.symbols.push_back({addr, addr + sym.st_size, name, GELF_ST_BIND(sym.st_info) != STB_LOCAL});
    }
    std::sort(m.symbols.begin(), m.symbols.end(), [](const Symbol& a, const Symbol& b) {
      return a.lo != b.lo ? a.lo < b.lo : a.global > b.global;
    });
  }
  auto it = std::upper_bound(m.symbols.begin(), m.symbols.end(), address,
                             [](uint64_t x, const Symbol& s) { return x < s.lo; });
  // The nearest symbol that covers the address, of its aliases (one start) the first in order
  // (a global one); a few steps back, past symbols that end before the address.
  const Symbol* best = nullptr;
  for (int i = 0; i < 8 && it != m.symbols.begin(); ++i) {
    --it;
    if (best && it->lo != best->lo) break;
    if (address < it->hi) best = &*it;
  }
  return best;
}

const std::string& Resolver::demangled(const char* name) {
  auto [it, inserted] = names_.try_emplace(name);
  if (inserted) {
    // Symbol tables carry versions ("fopen@@GLIBC_2.2.5"); DWARF names never contain '@'.
    const char* at = std::strchr(name, '@');
    std::string plain = at ? std::string(name, static_cast<size_t>(at - name)) : std::string();
    const char* mangled = at ? plain.c_str() : name;
    int status = -1;
    char* d = mangled[0] == '_' ? abi::__cxa_demangle(mangled, nullptr, nullptr, &status) : nullptr;
    if (d && status == 0)
      it->second = d;
    else
      it->second = mangled;
    std::free(d);
  }
  return it->second;
}

namespace {

// The DIE that carries the name: an inlined or concrete copy points to it.
Dwarf_Die namedDie(const Dwarf_Die& die) {
  Dwarf_Die named = die;
  for (int i = 0; i < 8 && !dwarf_hasattr(&named, DW_AT_name); ++i) {
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if (!dwarf_attr(&named, DW_AT_abstract_origin, &attr) &&
        !dwarf_attr(&named, DW_AT_specification, &attr))
      break;
    if (!dwarf_formref_die(&attr, &next)) break;
    named = next;
  }
  return named;
}

}  // namespace

std::string Resolver::qualifiedName(CuTable& cu, Dwarf_Die* named, bool c) {
  const char* name = dwarf_diename(named);
  if (!name) return {};
  if (c) return name;
  if (named->cu == cu.cudie.cu) {
    const std::string* prefix = cu.scopeOf(named);
    return prefix ? *prefix + name : name;
  }
  // In another unit (DW_FORM_ref_addr): libdw walks that unit to find the enclosing scopes.
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes_die(named, &scopes);
  std::string out;
  for (int i = n - 1; i >= 1; --i) {
    int tag = dwarf_tag(&scopes[i]);
    const char* scope = dwarf_diename(&scopes[i]);
    if (tag == DW_TAG_namespace)
      out += scope ? scope : "(anonymous namespace)";
    else if ((tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
              tag == DW_TAG_union_type) &&
             scope)
      out += scope;
    else
      continue;
    out += "::";
  }
  std::free(scopes);
  return out + name;
}

// Demangled linkage name; else, for an out-of-line C++ function, the mangled symbol that starts
// at its entry (the symbol table has mangled names where DWARF has none: static and
// anonymous-namespace functions); else the DWARF name, in C++ qualified by its namespaces and
// classes (no parameters: an inlined static function, say, is "ns::helper"). C functions keep
// their DWARF name, not an alias the symbol table may list first ("fclose@@GLIBC_2.2.5").
const std::string& Resolver::functionName(Module& m, CuTable& cu, int32_t node, uint64_t bias) {
  CuTable::Node& n = cu.nodes[static_cast<size_t>(node)];
  if (!n.name) n.name = &lookUpName(m, cu, node, bias);
  return *n.name;
}

const std::string& Resolver::lookUpName(Module& m, CuTable& cu, int32_t node, uint64_t bias) {
  CuTable::Node& n = cu.nodes[static_cast<size_t>(node)];
  Dwarf_Attribute attr;
  const char* linkage = dwarf_formstring(dwarf_attr_integrate(&n.die, DW_AT_linkage_name, &attr));
  if (!linkage)
    linkage = dwarf_formstring(dwarf_attr_integrate(&n.die, DW_AT_MIPS_linkage_name, &attr));
  if (linkage) return demangled(linkage);
  int lang = dwarf_srclang(&cu.cudie);
  bool c = lang == DW_LANG_C || lang == DW_LANG_C89 || lang == DW_LANG_C99 || lang == DW_LANG_C11;
  if (n.parent < 0 && !c) {
    auto [it, inserted] = unlinkedRoots_.try_emplace(n.die.addr);
    if (!inserted) return it->second;
    // At the entry, not at the address looked up: code split off the function ("foo() [clone
    // .cold]") has a symbol of its own, and the name must not depend on which address came first.
    Dwarf_Addr entry = 0;
    if (dwarf_entrypc(&n.die, &entry) != 0) entry = cu.ranges[n.rangesBegin].first;
    const Symbol* s = symbolAt(m, entry + bias);
    if (s && s->lo == entry + bias && std::strncmp(s->name, "_Z", 2) == 0) {
      it->second = demangled(s->name);
    } else {
      Dwarf_Die named = namedDie(n.die);
      it->second = qualifiedName(cu, &named, c);
    }
    return it->second;
  }
  Dwarf_Die named = namedDie(n.die);
  auto [it, inserted] = unlinked_.try_emplace(named.addr);
  if (inserted) it->second = qualifiedName(cu, &named, c);
  return it->second;
}

const std::string& Resolver::fileName(const char* name) {
  auto [it, inserted] = files_.try_emplace(name);
  if (inserted) it->second = name;
  return it->second;
}

bool Resolver::ownLines(Module& m, CuTable& cu) {
  if (cu.linesState == 0) {
    bool read = false;
    if (rawAllowed_) {
      Dwarf* dbg = dwarf_cu_getdwarf(cu.cudie.cu);
      if (dbg != m.lineDbg) {
        m.lineDbg = dbg;
        m.lineSections = LineSections::of(dbg);
      }
      read = cu.lines.read(&cu.cudie, m.lineSections);
    }
    cu.linesState = read ? 1 : 2;
    ++(read ? linesRead_ : linesLibdw_);
  }
  return cu.linesState == 1;
}

// The file and line of `a` (a unit address) as dwarf_getsrc_die, dwarf_lineno and dwarf_linesrc
// give them.
void Resolver::sourceLine(Module& m, CuTable& cu, uint64_t a, SourceFrame& out) {
  if (ownLines(m, cu)) {
    if (const LineTable::Row* row = cu.lines.find(a)) {
      if (row->line > 0) out.line = static_cast<uint32_t>(row->line);
      if (const std::string* src = cu.lines.fileName(row->file)) out.file = SymbolName::shared(*src);
    }
    return;
  }
  if (Dwarf_Line* line = dwarf_getsrc_die(&cu.cudie, a)) {
    int lineNo = 0;
    if (dwarf_lineno(line, &lineNo) == 0 && lineNo > 0) out.line = static_cast<uint32_t>(lineNo);
    if (const char* src = dwarf_linesrc(line, nullptr, nullptr))
      out.file = SymbolName::shared(fileName(src));
  }
}

// An inlined copy's DW_AT_call_file (kNoFile: none) as a name; nullptr when the table has none.
const std::string* Resolver::callFileName(Module& m, CuTable& cu, uint32_t index) {
  if (index == kNoFile) return nullptr;
  if (ownLines(m, cu)) return cu.lines.fileName(index);
  const char* src = cu.fileName(index);
  return src ? &fileName(src) : nullptr;
}

void Resolver::resolve(int32_t index, const ModuleFile& file, uint64_t address, Symbolized& out) {
  Module& m = module(index, file);
  if (!m.mod) {
    out.problem = m.problem;
    return;
  }
  // A return address: the call that made it ends just before it.
  uint64_t pc = address > 0 ? address - 1 : 0;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(m.mod, pc, &bias);
  if (cudie) {
    CuTable& cu = cuTable(m, cudie);
    uint64_t a = pc - bias;
    SourceFrame first;
    sourceLine(m, cu, a, first);
    int32_t node = cu.innermost(a);
    if (node >= 0) {
      size_t depth = 1;
      for (int32_t n = node; cu.nodes[static_cast<size_t>(n)].parent >= 0; ++depth)
        n = cu.nodes[static_cast<size_t>(n)].parent;
      out.frames.reserve(depth);
      // Innermost first: each inlined copy's call site is the position in the frame around it.
      for (int32_t n = node; n >= 0;) {
        CuTable::Node& cur = cu.nodes[static_cast<size_t>(n)];
        first.function = SymbolName::shared(functionName(m, cu, n, bias));
        out.frames.push_back(std::move(first));
        first = SourceFrame{};
        if (cur.parent < 0) break;
        if (const std::string* src = callFileName(m, cu, cur.callFile))
          first.file = SymbolName::shared(*src);
        first.line = cur.callLine;
        n = cur.parent;
      }
      if (!out.frames.back().function.empty()) return;
    } else {
      out.frames.push_back(std::move(first));
    }
    // DWARF had the line but no function: name it from the symbol table.
    if (const Symbol* s = symbolAt(m, pc))
      out.frames.back().function = SymbolName::shared(demangled(s->name));
    if (out.frames.back() == SourceFrame{}) out.frames.pop_back();
    if (out.frames.empty()) out.problem = "no symbol covers the address";
    return;
  }
  bool hasDwarf = dwfl_module_getdwarf(m.mod, &bias) != nullptr;
  if (const Symbol* s = symbolAt(m, pc)) {
    out.frames.push_back(SourceFrame{SymbolName::shared(demangled(s->name)), {}, 0});
    if (!hasDwarf) out.problem = "no debug info";
    return;
  }
  out.problem = hasDwarf ? "no symbol covers the address" : "no debug info and no symbol";
}

}  // namespace heapman::replay::detail
