#include "static_names.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace heapman::leaks {

const std::vector<StaticNames::Symbol>& StaticNames::symbols(size_t i) {
  auto [it, added] = loaded_.try_emplace(i);
  if (!added) return it->second;
  std::vector<Symbol>& out = it->second;
  const log::ModuleLoad& m = modules_[i];
  int fd = ::open(m.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  const void* id = nullptr;
  ssize_t idLen = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
  bool same = elf && (m.buildId.empty() ||
                      (idLen == static_cast<ssize_t>(m.buildId.size()) &&
                       std::memcmp(id, m.buildId.data(), m.buildId.size()) == 0));
  // The full symbol table when there is one (static symbols are only there), else .dynsym.
  for (int pass = 0; same && pass < 2 && out.empty(); ++pass) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn))) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) ||
          !sh.sh_entsize)
        continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      size_t n = data ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t k = 0; k < n; ++k) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(k), &sym)) continue;
        if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF || !sym.st_size)
          continue;
        const char* nm = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (!nm || !*nm) continue;
        std::string name = nm;
        int status = -1;
        if (char* d = abi::__cxa_demangle(nm, nullptr, nullptr, &status)) {
          if (status == 0) name = d;  // (anonymous namespace)::gCache
          std::free(d);
        }
        out.push_back({sym.st_value, sym.st_value + sym.st_size, std::move(name)});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Symbol& a, const Symbol& b) { return a.lo < b.lo; });
  if (elf) elf_end(elf);
  ::close(fd);
  return out;
}

int StaticNames::moduleAt(uint64_t address) const {
  // The last module loaded there (a library loaded where an unloaded one was takes its place).
  for (size_t i = modules_.size(); i-- > 0;) {
    const log::ModuleLoad& m = modules_[i];
    for (const log::ModuleSegment& s : m.segments)
      if (address >= m.base + s.vaddr && address < m.base + s.vaddr + s.memSize)
        return static_cast<int>(i);
  }
  return -1;
}

std::string StaticNames::moduleFile(uint64_t address) const {
  int i = moduleAt(address);
  if (i < 0) return "";
  const std::string& path = modules_[static_cast<size_t>(i)].path;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string StaticNames::name(uint64_t address) {
  int mi = moduleAt(address);
  if (mi >= 0) {
    size_t i = static_cast<size_t>(mi);
    const log::ModuleLoad& m = modules_[i];
    uint64_t off = address - m.base;
    const std::vector<Symbol>& syms = symbols(i);
    auto it = std::upper_bound(syms.begin(), syms.end(), off,
                               [](uint64_t x, const Symbol& s) { return x < s.lo; });
    if (it == syms.begin()) return "";
    --it;
    if (off >= it->hi) return "";
    if (off == it->lo) return it->name;
    char buf[32];
    std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(off - it->lo));
    return it->name + buf;
  }
  return "";
}

}  // namespace heapman::leaks
