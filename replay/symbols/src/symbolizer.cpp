#include "heapman/replay/symbolizer.h"

#include <elfutils/libdwfl.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <ostream>
#include <system_error>
#include <thread>

#include "debug_cache.h"
#include "elf_check.h"
#include "module_map.h"
#include "resolver.h"

namespace heapman::replay {

namespace {

// Each worker owns one contiguous region of the sorted addresses and takes it kPiece addresses
// at a time from the front; when done it helps the others, taking theirs from the back.
// Contiguous regions keep every CU's setup (line table, function tree, debug sections: each
// worker's own Dwfl does each once) to about one worker, and a helper starts on the CUs the owner
// would reach last, not on the one it is in.
constexpr size_t kPiece = 1024;

// The unclaimed addresses [front, back) of one region in one word (front << 32 | back): the
// owner and the helpers claim pieces from either end without overlapping.
class Region {
 public:
  void reset(uint64_t front, uint64_t back) { span_.store(front << 32 | back); }
  // [lo, hi) claimed; false when nothing is left.
  bool claim(bool fromBack, size_t& lo, size_t& hi) {
    uint64_t cur = span_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t front = cur >> 32, back = cur & 0xffffffffu;
      if (front >= back) return false;
      const uint64_t take = std::min<uint64_t>(back - front, kPiece);
      const uint64_t next = fromBack ? (front << 32 | (back - take)) : ((front + take) << 32 | back);
      if (span_.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
        lo = fromBack ? back - take : front;
        hi = lo + take;
        return true;
      }
    }
  }

 private:
  std::atomic<uint64_t> span_{0};
};

// Results where resolveAll (or resolve) constructed them, never moved: lookup() pointers stay
// valid. The storage is left untouched until a worker constructs each result in it, so the
// workers, not the calling thread, take the page faults of a large batch.
class Batch {
 public:
  explicit Batch(size_t n) : items_(std::allocator<Symbolized>().allocate(n)), capacity_(n) {}
  ~Batch() {
    // Every slot was constructed before the batch was handed to the index (see resolveAll).
    std::destroy_n(items_, constructed_);
    std::allocator<Symbolized>().deallocate(items_, capacity_);
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  Symbolized& construct(size_t i) { return *std::construct_at(items_ + i); }
  // Precondition: slots [0, n) have been constructed.
  void constructed(size_t n) { constructed_ = n; }
  Symbolized& operator[](size_t i) { return items_[i]; }

 private:
  Symbolized* items_;
  size_t capacity_;
  size_t constructed_ = 0;
};

// Address -> result: open addressing with linear probing, at most half full; nothing is removed.
// Indexing a batch of 400 000 results takes 20-40 ms on the calling thread, where moving each
// into an unordered_map node (a malloc and fresh pages for 130 bytes) took 110-150 ms.
class AddressIndex {
 public:
  const Symbolized* find(uint64_t address) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(address);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.value) return nullptr;
      if (s.address == address) return s.value;
    }
  }
  // Precondition: `address` is not in the index.
  void insert(uint64_t address, const Symbolized* value) {
    if ((count_ + 1) * 2 > slots_.size()) rehash(std::max<size_t>(64, slots_.size() * 2));
    place(address, value);
    ++count_;
  }
  void reserve(size_t n) {
    size_t want = 64;
    while (want < 2 * n) want *= 2;
    if (want > slots_.size()) rehash(want);
  }

 private:
  struct Slot {
    uint64_t address;
    const Symbolized* value;  // nullptr: free
  };
  // Fibonacci hashing: the top bits of the product (addresses differ in their low bits).
  size_t home(uint64_t address) const {
    return static_cast<size_t>((address * 0x9e3779b97f4a7c15ull) >> shift_);
  }
  void place(uint64_t address, const Symbolized* value) {
    size_t i = home(address);
    while (slots_[i].value) i = (i + 1) & mask_;
    slots_[i] = {address, value};
  }
  void rehash(size_t size) {  // size: a power of two
    std::vector<Slot> old(size, Slot{0, nullptr});
    old.swap(slots_);
    mask_ = size - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(size));
    for (const Slot& s : old)
      if (s.value) place(s.address, s.value);
  }

  std::vector<Slot> slots_;
  size_t count_ = 0, mask_ = 0;
  unsigned shift_ = 64;
};

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string baseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

const std::string SymbolName::kEmpty;

SymbolName::SymbolName(const char* s) : SymbolName(std::string(s)) {}

SymbolName::SymbolName(std::string s) : own_(std::make_shared<const std::string>(std::move(s))) {
  p_ = own_.get();
}

std::ostream& operator<<(std::ostream& out, const SymbolName& n) {
  return out << n.str();
}

std::string Symbolized::label() const {
  if (!frames.empty() && !frames.back().function.empty()) return frames.back().function.str();
  if (module >= 0)
    return (moduleName.empty() ? "module" + std::to_string(module) : moduleName) + "+" +
           hex(moduleOffset);
  return hex(address);
}

struct Symbolizer::Impl {
  SymbolizerOptions options;
  std::vector<log::ModuleLoad> modules;
  std::vector<detail::ModuleFile> files;  // parallel to modules
  detail::ModuleMap map;
  // libdwfl keeps a pointer to the pointer: both live as long as the resolvers.
  std::string debugPath;
  char* debugPathPtr = nullptr;
  Dwfl_Callbacks callbacks{};
  std::vector<std::unique_ptr<detail::Resolver>> resolvers;  // one per worker thread
  std::vector<std::unique_ptr<Batch>> batches;  // every result, in the order made
  AddressIndex cache;                            // into `batches`
  Stats stats;

  explicit Impl(SymbolizerOptions o) : options(std::move(o)) {
    // Extra directories first; then libdw's default: the module's directory, its .debug/, and
    // /usr/lib/debug (build-id lookups use the absolute entries: DIR/.build-id/xx/rest.debug).
    for (const std::string& dir : options.debugDirs) {
      std::error_code ec;
      std::filesystem::path abs = std::filesystem::absolute(dir, ec);
      std::string s = ec ? dir : abs.string();
      if (s.empty() || s.find(':') != std::string::npos) continue;  // ':' separates entries
      debugPath += s;
      debugPath += ':';
    }
    debugPath += ":.debug:/usr/lib/debug";
    debugPathPtr = debugPath.data();
    callbacks.find_elf = dwfl_build_id_find_elf;
    callbacks.find_debuginfo = detail::findDebuginfoCached;
    callbacks.section_address = dwfl_offline_section_address;
    callbacks.debuginfo_path = &debugPathPtr;
  }

  std::string mappedPath(const std::string& path) const {
    for (const auto& [from, to] : options.pathMaps)
      if (!from.empty() && path.compare(0, from.size(), from) == 0)
        return to + path.substr(from.size());
    return path;
  }

  void checkFile(int32_t index) {
    detail::ModuleFile& f = files[static_cast<size_t>(index)];
    if (f.checked) return;
    f.checked = true;
    try {
      f.problem = detail::checkModuleFile(f.path, modules[static_cast<size_t>(index)].buildId);
    } catch (const std::exception& e) {
      f.problem = std::string("cannot check module file: ") + e.what();
    }
  }

  detail::Resolver& resolver(size_t worker) {
    if (resolvers.size() <= worker) resolvers.resize(worker + 1);
    if (!resolvers[worker]) resolvers[worker] = std::make_unique<detail::Resolver>(&callbacks);
    return *resolvers[worker];
  }

  // Precondition: the address's module file has been checked (checkFile).
  void resolveOne(detail::Resolver& r, uint64_t address, Symbolized& out) const {
    out.address = address;
    out.module = map.find(address);
    if (out.module < 0) {
      out.problem = "address outside every module";
      return;
    }
    const auto i = static_cast<size_t>(out.module);
    out.moduleOffset = address - modules[i].base;
    out.moduleName = baseName(modules[i].path);
    if (!files[i].problem.empty()) {
      out.problem = files[i].problem;
      return;
    }
    try {
      r.resolve(out.module, files[i], address, out);
    } catch (const std::exception& e) {
      out.frames.clear();
      out.problem = std::string("symbolizer error: ") + e.what();
    }
  }

  static void count(const Symbolized& s, Stats& to) {
    ++to.resolved;
    if (std::any_of(s.frames.begin(), s.frames.end(),
                    [](const SourceFrame& f) { return !f.function.empty(); }))
      ++to.withFunction;
    if (!s.frames.empty() && s.frames.front().line > 0) ++to.withLine;
  }
};

Symbolizer::Symbolizer(SymbolizerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

Symbolizer::~Symbolizer() = default;

void Symbolizer::addModule(const log::ModuleLoad& module) {
  auto index = static_cast<int32_t>(impl_->modules.size());
  impl_->modules.push_back(module);
  detail::ModuleFile f;
  f.path = impl_->mappedPath(module.path);
  f.base = module.base;
  impl_->files.push_back(std::move(f));
  impl_->map.add(module, index);
}

const std::vector<log::ModuleLoad>& Symbolizer::modules() const {
  return impl_->modules;
}

void Symbolizer::resolveAll(std::span<const uint64_t> addresses) {
  auto t0 = std::chrono::steady_clock::now();
  Impl& im = *impl_;
  std::vector<uint64_t> todo;
  todo.reserve(addresses.size());
  for (uint64_t a : addresses)
    if (!im.cache.find(a)) todo.push_back(a);
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());

  if (!todo.empty()) {
    // Files are checked here, once, so the workers only read the module list.
    int32_t last = -1;
    for (uint64_t a : todo) {
      int32_t m = im.map.find(a);
      if (m >= 0 && m != last) im.checkFile(m);
      last = m;
    }

    auto results = std::make_unique<Batch>(todo.size());
    unsigned want = im.options.threads ? im.options.threads : std::thread::hardware_concurrency();
    const size_t n = todo.size();
    const size_t workers = std::clamp<size_t>(want, 1, (n + kPiece - 1) / kPiece);
    for (size_t w = 0; w < workers; ++w)
      im.resolver(w);  // created here: workers don't allocate shared state

    // Regions are indexed in 32 bits: `results` (over 100 bytes an address) could not have
    // been allocated for 2^32 of them.
    const size_t region = (n + workers - 1) / workers;
    std::vector<Region> regions(workers);
    for (size_t w = 0; w < workers; ++w)
      regions[w].reset(std::min(n, w * region), std::min(n, (w + 1) * region));
    std::vector<Stats> counts(workers);
    auto work = [&](size_t w) {
      detail::Resolver& r = *im.resolvers[w];
      for (size_t i = 0; i < workers; ++i) {  // its own region first, then the others'
        const size_t v = (w + i) % workers;
        for (size_t lo, hi; regions[v].claim(i != 0, lo, hi);) {
          for (size_t j = lo; j < hi; ++j) {
            Symbolized& s = results->construct(j);
            im.resolveOne(r, todo[j], s);
            Impl::count(s, counts[w]);
          }
        }
      }
    };
    std::vector<std::thread> threads;
    for (size_t w = 1; w < workers; ++w) {
      try {
        threads.emplace_back(work, w);
      } catch (const std::system_error&) {
        break;  // fewer threads: the regions left are taken by those that run
      }
    }
    work(0);
    for (std::thread& t : threads) t.join();

    // Every slot is constructed: the regions cover [0, n) and each is claimed until empty.
    results->constructed(n);
    for (const Stats& c : counts) {
      im.stats.resolved += c.resolved;
      im.stats.withFunction += c.withFunction;
      im.stats.withLine += c.withLine;
    }
    im.cache.reserve(im.stats.resolved);
    for (size_t j = 0; j < n; ++j) im.cache.insert(todo[j], &(*results)[j]);
    im.batches.push_back(std::move(results));
  }
  im.stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const Symbolized* Symbolizer::lookup(uint64_t address) const {
  return impl_->cache.find(address);
}

const Symbolized& Symbolizer::resolve(uint64_t address) {
  Impl& im = *impl_;
  if (const Symbolized* known = im.cache.find(address)) return *known;
  int32_t m = im.map.find(address);
  if (m >= 0) im.checkFile(m);
  auto one = std::make_unique<Batch>(1);
  Symbolized& s = one->construct(0);
  one->constructed(1);
  im.resolveOne(im.resolver(0), address, s);
  Impl::count(s, im.stats);
  im.cache.insert(address, &s);
  im.batches.push_back(std::move(one));
  return s;
}

Symbolizer::Stats Symbolizer::stats() const {
  Stats s = impl_->stats;
  for (const auto& r : impl_->resolvers) {
    if (!r) continue;
    s.unitsRead += r->unitsRead();
    s.unitsWalked += r->unitsWalked();
    s.linesRead += r->linesRead();
    s.linesLibdw += r->linesLibdw();
  }
  return s;
}

}  // namespace heapman::replay
