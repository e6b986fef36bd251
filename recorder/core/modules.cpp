#include "modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace heapman::rec {

namespace {

std::vector<uint8_t> buildIdOf(const dl_phdr_info* pi) {
  for (int i = 0; i < pi->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = pi->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto* p = reinterpret_cast<const uint8_t*>(pi->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((nh->n_namesz + 3) & ~3u);
      const uint8_t* next = desc + ((nh->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0)
        return std::vector<uint8_t>(desc, desc + nh->n_descsz);
      p = next;
    }
  }
  return {};
}

}  // namespace

std::map<uint64_t, log::ModuleLoad> scanModules() {
  std::map<uint64_t, log::ModuleLoad> out;
  dl_iterate_phdr(
      [](dl_phdr_info* pi, size_t, void* arg) -> int {
        auto& mods = *static_cast<std::map<uint64_t, log::ModuleLoad>*>(arg);
        log::ModuleLoad m;
        m.path = pi->dlpi_name ? pi->dlpi_name : "";
        if (m.path.empty() && mods.empty()) {  // the first entry is the main program
          char exe[PATH_MAX];
          ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
          if (n > 0) m.path.assign(exe, static_cast<size_t>(n));
        }
        m.base = pi->dlpi_addr;
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < pi->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = pi->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          m.segments.push_back({ph.p_vaddr, ph.p_memsz, ph.p_flags});
          lo = std::min<uint64_t>(lo, ph.p_vaddr);
          hi = std::max<uint64_t>(hi, ph.p_vaddr + ph.p_memsz);
        }
        m.size = hi > lo ? hi - lo : 0;
        m.buildId = buildIdOf(pi);
        mods.emplace(m.base, std::move(m));
        return 0;
      },
      &out);
  return out;
}

}  // namespace heapman::rec
