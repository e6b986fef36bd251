#include "heapman/replay/symbolizer.h"

#include <elfutils/libdwfl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <ostream>
#include <system_error>
#include <thread>
#include <unordered_map>

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
  std::unordered_map<uint64_t, Symbolized> cache;  // node-based: lookup() pointers stay valid
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

  void count(const Symbolized& s) {
    ++stats.resolved;
    if (std::any_of(s.frames.begin(), s.frames.end(),
                    [](const SourceFrame& f) { return !f.function.empty(); }))
      ++stats.withFunction;
    if (!s.frames.empty() && s.frames.front().line > 0) ++stats.withLine;
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
    if (!im.cache.count(a)) todo.push_back(a);
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

    std::vector<Symbolized> results(todo.size());
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
    auto work = [&](size_t w) {
      detail::Resolver& r = *im.resolvers[w];
      for (size_t i = 0; i < workers; ++i) {  // its own region first, then the others'
        const size_t v = (w + i) % workers;
        for (size_t lo, hi; regions[v].claim(i != 0, lo, hi);)
          for (size_t j = lo; j < hi; ++j) im.resolveOne(r, todo[j], results[j]);
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

    im.cache.reserve(im.cache.size() + results.size());
    for (Symbolized& s : results) {
      im.count(s);
      uint64_t a = s.address;
      im.cache.emplace(a, std::move(s));
    }
  }
  im.stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const Symbolized* Symbolizer::lookup(uint64_t address) const {
  auto it = impl_->cache.find(address);
  return it == impl_->cache.end() ? nullptr : &it->second;
}

const Symbolized& Symbolizer::resolve(uint64_t address) {
  Impl& im = *impl_;
  auto it = im.cache.find(address);
  if (it != im.cache.end()) return it->second;
  int32_t m = im.map.find(address);
  if (m >= 0) im.checkFile(m);
  Symbolized s;
  im.resolveOne(im.resolver(0), address, s);
  im.count(s);
  return im.cache.emplace(address, std::move(s)).first->second;
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
