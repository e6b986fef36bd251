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

namespace {
template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
bool get(const uint8_t*& p, const uint8_t* end, T& v) {
  if (static_cast<size_t>(end - p) < sizeof v) return false;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return true;
}
}  // namespace

// Layout per module: u64 base, u64 size, u32 path length, u32 build-id length, u32 segments,
// path, build id, then per segment u64 vaddr, u64 memSize, u32 flags.
std::string serializeModules(const std::map<uint64_t, log::ModuleLoad>& mods) {
  std::string out;
  for (const auto& [base, m] : mods) {
    put(out, m.base);
    put(out, m.size);
    put(out, static_cast<uint32_t>(m.path.size()));
    put(out, static_cast<uint32_t>(m.buildId.size()));
    put(out, static_cast<uint32_t>(m.segments.size()));
    out += m.path;
    out.append(m.buildId.begin(), m.buildId.end());
    for (const log::ModuleSegment& seg : m.segments) {
      put(out, seg.vaddr);
      put(out, seg.memSize);
      put(out, seg.flags);
    }
  }
  return out;
}

std::map<uint64_t, log::ModuleLoad> deserializeModules(const uint8_t* p, size_t size) {
  std::map<uint64_t, log::ModuleLoad> out;
  const uint8_t* end = p + size;
  while (p < end) {
    log::ModuleLoad m;
    uint32_t pathLen, idLen, nseg;
    if (!get(p, end, m.base) || !get(p, end, m.size) || !get(p, end, pathLen) ||
        !get(p, end, idLen) || !get(p, end, nseg) ||
        static_cast<size_t>(end - p) < size_t{pathLen} + idLen)
      break;
    m.path.assign(reinterpret_cast<const char*>(p), pathLen);
    p += pathLen;
    m.buildId.assign(p, p + idLen);
    p += idLen;
    for (uint32_t i = 0; i < nseg; ++i) {
      log::ModuleSegment seg;
      if (!get(p, end, seg.vaddr) || !get(p, end, seg.memSize) || !get(p, end, seg.flags)) break;
      m.segments.push_back(seg);
    }
    out.emplace(m.base, std::move(m));
  }
  return out;
}

}  // namespace heapman::rec
