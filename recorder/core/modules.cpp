// The loaded modules: scanned, serialized into a ring event, and recorded after dlopen/dlclose.
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

namespace {
// True when [addr, addr + len) lies inside one of the module's PT_LOAD segments (readable
// memory); with `exec`, an executable one.
bool mapped(const dl_phdr_info* pi, uintptr_t addr, size_t len, bool exec) {
  for (int i = 0; i < pi->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = pi->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (exec && !(ph.p_flags & PF_X))) continue;
    uintptr_t lo = pi->dlpi_addr + ph.p_vaddr;
    if (addr >= lo && len <= ph.p_filesz && addr - lo <= ph.p_filesz - len) return true;
  }
  return false;
}

// Bytes an encoded pointer of .eh_frame_hdr takes (DW_EH_PE_* low nibble), or -1.
int encodedSize(uint8_t enc) {
  if (enc == 0xff) return 0;  // DW_EH_PE_omit
  switch (enc & 0x0f) {
    case 0x00:
      return sizeof(void*);  // absptr
    case 0x02:
    case 0x0a:
      return 2;  // udata2, sdata2
    case 0x03:
    case 0x0b:
      return 4;  // udata4, sdata4
    case 0x04:
    case 0x0c:
      return 8;  // udata8, sdata8
    default:
      return -1;
  }
}
const uint8_t* uleb(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; p < end && shift < 64; shift += 7) {
    uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return p;
  }
  return nullptr;
}

// Whether the FDE at `fde` may vote: a function that calls something moves the stack pointer
// first (a push, for alignment if nothing else), so its first call-frame instruction advances
// the location past that. Not voting: FDEs without instructions (leaf code or tail calls only:
// never a caller's frame in a stack), and FDEs that start by restating a frame (def_cfa at
// offset 0): the PLT, and cold fragments that GCC's -freorder-blocks-and-partition moves out of
// their function with an FDE of their own. True when unsure.
enum class Vote : uint8_t { kNone, kUnsure, kFramePointer };
Vote votes(const dl_phdr_info* pi, uintptr_t fde) {
  uint32_t len, ciePtr;
  if (!mapped(pi, fde, 8, false)) return Vote::kUnsure;
  std::memcpy(&len, reinterpret_cast<const void*>(fde), 4);
  std::memcpy(&ciePtr, reinterpret_cast<const void*>(fde + 4), 4);
  if (len < 4 || len == 0xffffffffu || !mapped(pi, fde, 4 + size_t{len}, false))
    return Vote::kUnsure;
  uintptr_t cie = fde + 4 - ciePtr;
  uint32_t cieLen;
  if (!mapped(pi, cie, 4, false)) return Vote::kUnsure;
  std::memcpy(&cieLen, reinterpret_cast<const void*>(cie), 4);
  if (cieLen < 8 || cieLen == 0xffffffffu || !mapped(pi, cie, 4 + size_t{cieLen}, false))
    return Vote::kUnsure;
  const auto* c = reinterpret_cast<const uint8_t*>(cie) + 8;  // length, CIE id
  const uint8_t* cend = reinterpret_cast<const uint8_t*>(cie) + 4 + cieLen;
  uint8_t version = *c++;
  const char* aug = reinterpret_cast<const char*>(c);
  while (c < cend && *c) ++c;
  if (c >= cend || aug[0] != 'z') return Vote::kUnsure;
  ++c;
  uint64_t v;
  if (!(c = uleb(c, cend, v)) || !(c = uleb(c, cend, v)))
    return Vote::kUnsure;  // code, data alignment
  if (version == 1)
    ++c;
  else if (!(c = uleb(c, cend, v)))
    return Vote::kUnsure;
  if (!(c = uleb(c, cend, v))) return Vote::kUnsure;  // augmentation data length
  int ptrSize = -1;
  for (const char* a = aug + 1; *a && c < cend; ++a) {
    if (*a == 'R') {
      ptrSize = encodedSize(*c++);
    } else if (*a == 'L') {
      ++c;
    } else if (*a == 'P') {
      int n = encodedSize(*c++);
      if (n < 0) return Vote::kUnsure;
      c += n;
    } else if (*a != 'S') {
      return Vote::kUnsure;
    }
  }
  if (ptrSize <= 0) return Vote::kUnsure;
  const auto* f = reinterpret_cast<const uint8_t*>(fde) + 8 + 2 * ptrSize;
  const uint8_t* fend = reinterpret_cast<const uint8_t*>(fde) + 4 + len;
  if (f > fend || !(f = uleb(f, fend, v)) || v > static_cast<uint64_t>(fend - f))
    return Vote::kUnsure;
  f += v;
  if (f >= fend) return Vote::kNone;  // no instructions
  uint8_t op = *f;
  // DW_CFA_advance_loc, advance_loc1/2/4 (DW_CFA_nop: padding, no instructions)
  if (!((op & 0xc0) == 0x40 || op == 0x02 || op == 0x03 || op == 0x04)) return Vote::kNone;
  // Does the function make rbp its CFA register (def_cfa_register or def_cfa with r6)? GCC's
  // scheduler may move `mov %rsp,%rbp` away from the push, or shrink-wrap the prologue, so the
  // call-frame instructions tell more than the first bytes.
  while (f < fend) {
    op = *f++;
    uint64_t a = 0, b = 0;
    if ((op & 0xc0) == 0x40 || (op & 0xc0) == 0xc0 || op == 0x00 || op == 0x0a || op == 0x0b) {
    } else if ((op & 0xc0) == 0x80 || op == 0x06 || op == 0x07 || op == 0x08 || op == 0x0e ||
               op == 0x13 || op == 0x2e) {
      if (!(f = uleb(f, fend, a))) break;
    } else if (op == 0x02 || op == 0x03 || op == 0x04) {
      f += op == 0x02 ? 1 : op == 0x03 ? 2 : 4;
    } else if (op == 0x05 || op == 0x09 || op == 0x0c || op == 0x11 || op == 0x12 || op == 0x14 ||
               op == 0x15 || op == 0x2f) {
      if (!(f = uleb(f, fend, a)) || !(f = uleb(f, fend, b))) break;
      if (op == 0x0c && a == 6) return Vote::kFramePointer;  // DW_CFA_def_cfa r6
    } else if (op == 0x0d) {
      if (!(f = uleb(f, fend, a))) break;
      if (a == 6) return Vote::kFramePointer;  // DW_CFA_def_cfa_register r6
    } else if (op == 0x0f) {
      if (!(f = uleb(f, fend, a)) || a > static_cast<uint64_t>(fend - f)) break;
      f += a;
    } else if (op == 0x10 || op == 0x16) {
      if (!(f = uleb(f, fend, a)) || !(f = uleb(f, fend, b)) || b > static_cast<uint64_t>(fend - f))
        break;
      f += b;
    } else {
      break;  // unknown: the prologue bytes decide
    }
  }
  return Vote::kUnsure;
}

}  // namespace

// .eh_frame_hdr (LSB, "Exception Frame Header"): u8 version (1), u8 eh_frame_ptr_enc,
// u8 fde_count_enc, u8 table_enc, eh_frame_ptr (eh_frame_ptr_enc), fde_count (fde_count_enc),
// then fde_count pairs (initial_location, fde address) sorted by location, each table_enc.
uint32_t framelessRanges(const dl_phdr_info* pi, CodeRange* out, uint32_t max, uintptr_t* ehHdr) {
  const ElfW(Phdr)* hdr = nullptr;
  for (int i = 0; i < pi->dlpi_phnum; ++i)
    if (pi->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) hdr = &pi->dlpi_phdr[i];
  if (!hdr || hdr->p_memsz < 8) return 0;
  uintptr_t base = pi->dlpi_addr + hdr->p_vaddr;
  if (!mapped(pi, base, hdr->p_memsz, false)) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(base);
  int ptrSize = encodedSize(p[1]);
  // fde_count udata4; table of (datarel|sdata4, datarel|sdata4) pairs, relative to the header.
  if (p[0] != 1 || ptrSize < 0 || p[2] != 0x03 || p[3] != 0x3b) return 0;
  size_t at = 4 + static_cast<size_t>(ptrSize);
  if (at + 4 > hdr->p_memsz) return 0;
  uint32_t count;
  std::memcpy(&count, p + at, 4);
  at += 4;
  if (count == 0 || count > (hdr->p_memsz - at) / 8) return 0;
  auto entry = [&](uint64_t index, bool second) {
    int32_t v;
    std::memcpy(&v, p + at + index * 8 + (second ? 4 : 0), 4);
    return base + static_cast<uintptr_t>(static_cast<intptr_t>(v));
  };
  const uint32_t want = std::min(count, kFramePointerSamples);
  uint32_t checked = 0, kept = 0;
  for (uint32_t s = 0; s < want; ++s) {
    uint64_t index = uint64_t{s} * count / want;
    uintptr_t fn = entry(index, false);
    if (!mapped(pi, fn, 8, true)) continue;  // not code we can read: no vote
    Vote vote = votes(pi, entry(index, true));
    if (vote == Vote::kNone) continue;
    const auto* code = reinterpret_cast<const uint8_t*>(fn);
    static constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    static constexpr uint8_t kPrologue[4] = {0x55, 0x48, 0x89, 0xe5};  // push %rbp; mov %rsp,%rbp
    if (std::memcmp(code, kEndbr64, 4) == 0) code += 4;
    ++checked;
    if (vote == Vote::kFramePointer || std::memcmp(code, kPrologue, 4) == 0) ++kept;
  }
  if (checked == 0 || 2 * kept >= checked) return 0;  // unclassified, or keeps frame pointers
  uint32_t n = 0;
  for (int i = 0; i < pi->dlpi_phnum && n < max; ++i) {
    const ElfW(Phdr)& ph = pi->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    out[n++] = {pi->dlpi_addr + ph.p_vaddr, pi->dlpi_addr + ph.p_vaddr + ph.p_memsz};
  }
  if (ehHdr) *ehHdr = base;
  return n;
}

void recordModules() {
  if (t_guard || !g.active.load(std::memory_order_relaxed)) return;
  Guard guard;
  if (g.unwind == State::Unwind::kAuto) classifyModules();
  Ring* r = threadRing();
  if (!r) return;
  std::string blob = serializeModules(scanModules());
  if (blob.size() > r->capacity / 4) return;  // the writer's periodic rescan will see them
  RawEvent* e = begin(r, Kind::kModules, 0, static_cast<uint32_t>(blob.size()));
  if (!e) return;
  std::memcpy(extraOf(e), blob.data(), blob.size());
  commit(r, e);
}

}  // namespace heapman::rec
