#include "elf_check.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace heapman::replay::detail {

namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

struct ElfHandle {
  Elf* elf;
  ~ElfHandle() {
    if (elf) elf_end(elf);
  }
};

// libelf trusts the offsets in the headers; a file cut short would make it read past the end
// (or fail later, deep inside libdw, with a vaguer message).
bool wholeFile(Elf* elf, uint64_t fileSize) {
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr)) return false;
  auto fits = [fileSize](uint64_t off, uint64_t len) {
    return off <= fileSize && len <= fileSize - off;
  };
  if (!fits(ehdr.e_phoff, uint64_t{ehdr.e_phnum} * ehdr.e_phentsize)) return false;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return false;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph)) return false;
    if (ph.p_type == PT_LOAD && !fits(ph.p_offset, ph.p_filesz)) return false;
  }
  size_t shnum = 0;
  if (elf_getshdrnum(elf, &shnum) != 0) return false;
  if (shnum > 0 && !fits(ehdr.e_shoff, uint64_t{shnum} * ehdr.e_shentsize)) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) return false;
    if (sh.sh_type != SHT_NOBITS && !fits(sh.sh_offset, sh.sh_size)) return false;
  }
  return true;
}

}  // namespace

std::string checkModuleFile(const std::string& path, const std::vector<uint8_t>& recordedBuildId) {
  if (path.empty()) return "module has no file name";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR
               ? "module file not found"
               : std::string("cannot open module file: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "module path is not a regular file";
  Fd fd{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) return std::string("cannot open module file: ") + std::strerror(errno);
  elf_version(EV_CURRENT);
  ElfHandle elf{elf_begin(fd.fd, ELF_C_READ_MMAP, nullptr)};
  if (!elf.elf || elf_kind(elf.elf) != ELF_K_ELF) return "not an ELF file";
  if (!wholeFile(elf.elf, static_cast<uint64_t>(st.st_size))) return "truncated ELF file";
  if (recordedBuildId.empty()) return {};
  const void* id = nullptr;
  ssize_t n = dwelf_elf_gnu_build_id(elf.elf, &id);
  if (n <= 0) return "build id differs (the file has none)";
  if (static_cast<size_t>(n) != recordedBuildId.size() ||
      std::memcmp(id, recordedBuildId.data(), recordedBuildId.size()) != 0)
    return "build id differs";
  return {};
}

}  // namespace heapman::replay::detail
