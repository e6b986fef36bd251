// symbols_bench: how fast the symbolizer resolves a large batch of unique addresses.
//
//   symbols_bench [--count N] [--threads T] [--dump DIR] [--print] FILE...
//
// Takes N unique addresses (default 400 000), evenly spaced over the executable PT_LOAD
// segments of the given ELF files (every k-th byte: instruction-ish, like return addresses),
// each file placed at a load bias of its own as the recorder would see it, and times one
// resolveAll(). Without files it uses its own executable. Prints unique addresses/s, the CPU the
// process spent in the call (user + sys: on a shared machine the wall time reflects the others'
// load), the share of addresses with a function and with a source line, and how many compile
// units were read directly or walked through libdw; last, what freeing the symbolizer costs
// (results and debug sessions: what a program pays at exit).
//
// --dump DIR writes, per file, DIR/N.path (the file) and DIR/N.addr (the addresses minus one, as
// file addresses: what the symbolizer looks up), so a peer can be timed on the same work
// (bench/run_symbols_bench.sh does). With --print it also writes DIR/N.ours: the results in
// `addr2line -a -f -i` form (address line, then function and file:line per frame, innermost
// first), for comparing answers.
#include <elf.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "heapman/replay/symbolizer.h"

using heapman::log::ModuleLoad;
using heapman::replay::Symbolizer;
using heapman::replay::SymbolizerOptions;

namespace {

// The bytes [offset, offset + size) of a file; empty when it is shorter.
std::vector<char> readAt(std::ifstream& in, uint64_t offset, uint64_t size) {
  std::vector<char> out(size);
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in.read(out.data(), static_cast<std::streamsize>(size))) out.clear();
  return out;
}

// The recorder's view of FILE at load bias `base`: PT_LOAD segments and the GNU build id.
bool describe(const std::string& path, uint64_t base, ModuleLoad& m) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> head = readAt(in, 0, sizeof(Elf64_Ehdr));
  if (head.empty() || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0 ||
      head[EI_CLASS] != ELFCLASS64)
    return false;
  Elf64_Ehdr eh;
  std::memcpy(&eh, head.data(), sizeof eh);
  m = {};
  m.path = path;
  m.base = eh.e_type == ET_DYN ? base : 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    std::vector<char> raw =
        readAt(in, eh.e_phoff + uint64_t{i} * eh.e_phentsize, sizeof(Elf64_Phdr));
    if (raw.empty()) return false;
    Elf64_Phdr ph;
    std::memcpy(&ph, raw.data(), sizeof ph);
    if (ph.p_type == PT_LOAD) {
      m.segments.push_back({ph.p_vaddr, ph.p_memsz, ph.p_flags});
      lo = std::min<uint64_t>(lo, ph.p_vaddr);
      hi = std::max<uint64_t>(hi, ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_NOTE) {
      std::vector<char> notes = readAt(in, ph.p_offset, ph.p_filesz);
      const char* p = notes.data();
      const char* end = p + notes.size();
      while (p + sizeof(Elf64_Nhdr) <= end) {
        Elf64_Nhdr nh;
        std::memcpy(&nh, p, sizeof nh);
        const char* name = p + sizeof nh;
        const char* desc = name + ((nh.n_namesz + 3) & ~3u);
        const char* next = desc + ((nh.n_descsz + 3) & ~3u);
        if (next > end) break;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0)
          m.buildId.assign(desc, desc + nh.n_descsz);
        p = next;
      }
    }
  }
  m.size = hi > lo ? hi - lo : 0;
  return !m.segments.empty();
}

}  // namespace

int main(int argc, char** argv) {
  size_t count = 400000;
  unsigned threads = 0;
  std::string dump;
  bool print = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--count" && i + 1 < argc)
      count = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--threads" && i + 1 < argc)
      threads = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (a == "--dump" && i + 1 < argc)
      dump = argv[++i];
    else if (a == "--print")
      print = true;
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(
          stderr,
          "usage: symbols_bench [--count N] [--threads T] [--dump DIR] [--print] FILE...\n");
      return 2;
    } else
      files.push_back(a);
  }
  if (files.empty()) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    files.emplace_back(self, static_cast<size_t>(n));
  }

  std::vector<ModuleLoad> modules;
  uint64_t codeBytes = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    ModuleLoad m;
    if (!describe(files[i], 0x7f0000000000ull + (uint64_t{i} << 32), m)) {
      std::fprintf(stderr, "symbols_bench: %s: not a 64-bit ELF file with segments\n",
                   files[i].c_str());
      return 1;
    }
    for (const auto& s : m.segments)
      if (s.flags & PF_X) codeBytes += s.memSize;
    modules.push_back(std::move(m));
  }
  const uint64_t step = std::max<uint64_t>(1, codeBytes / std::max<size_t>(count, 1));
  std::vector<uint64_t> addresses;
  std::vector<std::vector<uint64_t>> perModule(modules.size());
  for (size_t i = 0; i < modules.size() && addresses.size() < count; ++i)
    for (const auto& s : modules[i].segments)
      if (s.flags & PF_X)
        for (uint64_t off = 1; off < s.memSize && addresses.size() < count; off += step) {
          addresses.push_back(modules[i].base + s.vaddr + off);
          perModule[i].push_back(s.vaddr + off - 1);
        }

  if (!dump.empty()) {
    for (size_t i = 0; i < modules.size(); ++i) {
      std::ofstream(dump + "/" + std::to_string(i) + ".path") << modules[i].path << "\n";
      std::ofstream out(dump + "/" + std::to_string(i) + ".addr");
      for (uint64_t a : perModule[i]) out << "0x" << std::hex << a << "\n";
    }
  }

  SymbolizerOptions options;
  options.threads = threads;
  auto owned = std::make_unique<Symbolizer>(options);
  Symbolizer& sym = *owned;
  for (const ModuleLoad& m : modules) sym.addModule(m);
  // CPU beside wall: on a shared machine the wall time says more about the others' load.
  auto cpu = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  const double cpu0 = cpu();
  auto t0 = std::chrono::steady_clock::now();
  sym.resolveAll(addresses);
  auto t1 = std::chrono::steady_clock::now();
  const double cpuSeconds = cpu() - cpu0;
  double s = std::chrono::duration<double>(t1 - t0).count();
  Symbolizer::Stats st = sym.stats();
  size_t frames = 0;
  for (uint64_t a : addresses) frames += sym.lookup(a)->frames.size();

  std::printf("files %zu, code %.1f MiB, every %llu bytes: %llu unique addresses, threads %u\n",
              modules.size(), static_cast<double>(codeBytes) / (1 << 20),
              static_cast<unsigned long long>(step), static_cast<unsigned long long>(st.resolved),
              threads);
  for (size_t i = 0; i < modules.size(); ++i) {
    size_t function = 0, line = 0;
    for (uint64_t fileAddress : perModule[i]) {
      const auto* r = sym.lookup(modules[i].base + fileAddress + 1);
      function += !r->frames.empty() && !r->frames.back().function.empty();
      line += !r->frames.empty() && r->frames.front().line > 0;
    }
    const double n = static_cast<double>(std::max<size_t>(perModule[i].size(), 1));
    std::printf("  %8zu  function %5.1f%%  line %5.1f%%  %s\n", perModule[i].size(),
                100.0 * static_cast<double>(function) / n, 100.0 * static_cast<double>(line) / n,
                modules[i].path.c_str());
  }
  std::printf("resolveAll: %.3f s, %.0f unique addresses/s, %.3f CPU-s (user + sys)\n", s,
              static_cast<double>(st.resolved) / s, cpuSeconds);
  std::printf("with function %.1f%%, with line %.1f%%, frames per address %.2f\n",
              100.0 * static_cast<double>(st.withFunction) / static_cast<double>(st.resolved),
              100.0 * static_cast<double>(st.withLine) / static_cast<double>(st.resolved),
              static_cast<double>(frames) / static_cast<double>(st.resolved));
  std::printf("compile units: %llu read directly, %llu walked through libdw (per worker)\n",
              static_cast<unsigned long long>(st.unitsRead),
              static_cast<unsigned long long>(st.unitsWalked));
  std::printf("line tables: %llu read directly, %llu through libdw (per worker)\n",
              static_cast<unsigned long long>(st.linesRead),
              static_cast<unsigned long long>(st.linesLibdw));

  if (print && !dump.empty()) {
    for (size_t i = 0; i < modules.size(); ++i) {
      std::FILE* out = std::fopen((dump + "/" + std::to_string(i) + ".ours").c_str(), "w");
      if (!out) return 1;
      for (uint64_t fileAddress : perModule[i]) {
        const auto* r = sym.lookup(modules[i].base + fileAddress + 1);
        std::fprintf(out, "0x%016llx\n", static_cast<unsigned long long>(fileAddress));
        if (r->frames.empty()) std::fprintf(out, "??\n??:0\n");
        for (const auto& f : r->frames)
          std::fprintf(out, "%s\n%s:%u\n", f.function.empty() ? "??" : f.function.c_str(),
                       f.file.empty() ? "??" : f.file.c_str(), f.line);
      }
      std::fclose(out);
    }
  }
  // What a program pays at exit for the results and the debug sessions (outside resolveAll).
  const double freeCpu0 = cpu();
  auto f0 = std::chrono::steady_clock::now();
  owned.reset();
  std::printf("freeing the symbolizer: %.3f s, %.3f CPU-s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count(),
              cpu() - freeCpu0);
  return 0;
}
