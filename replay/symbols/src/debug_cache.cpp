#include "debug_cache.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <signal.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace heapman::replay::detail {

namespace {

// Inflated copies beyond this size are not kept (a debug file of a large library can inflate to
// gigabytes); those are opened compressed, as before.
constexpr uint64_t kMaxInflatedBytes = uint64_t{1} << 29;

struct ElfHandle {
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf) elf_end(elf);
  }
};

// $XDG_CACHE_HOME/heapman/debug, else $HOME/.cache/heapman/debug; with `create`, made when
// missing (the cache directory itself too, as the XDG spec asks). Empty when neither variable is
// set or the directory can't be made.
std::string cacheDir(bool create) {
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h == '/')
    base = std::string(h) + "/.cache";
  else
    return {};
  std::string dir = base;
  for (const char* part : {"", "/heapman", "/debug"}) {
    dir += part;
    if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return {};
  }
  return dir;
}

std::string hexId(const void* id, ssize_t n) {
  std::string out;
  char b[3];
  for (ssize_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", static_cast<const unsigned char*>(id)[i]);
    out += b;
  }
  return out;
}

bool copyFile(int from, int to) {
  char buf[1 << 16];
  off_t off = 0;
  for (;;) {
    ssize_t n = pread(from, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(to, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += w;
    }
    off += n;
  }
}

// Removes the NAME.debug.tmp.PID.N files in `dir` of processes that no longer run (a copy
// interrupted by SIGKILL or a crash); those of live processes are being written.
void removeStaleCopies(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = readdir(d)) {
    const char* tmp = std::strstr(e->d_name, ".debug.tmp.");
    if (!tmp) continue;
    char* end = nullptr;
    long pid = std::strtol(tmp + std::strlen(".debug.tmp."), &end, 10);
    if (pid <= 0 || !end || *end != '.') continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      unlink((dir + "/" + e->d_name).c_str());
  }
  closedir(d);
}

// The inflated copy of the debug file open at `fd`, made in `dir` when missing: its path, or
// empty when the file has no compressed section (or no build id) or the copy can't be made.
std::string inflatedCopy(int fd, const std::string& dir) {
  ElfHandle src{elf_begin(fd, ELF_C_READ_MMAP, nullptr)};
  if (!src.elf || elf_kind(src.elf) != ELF_K_ELF) return {};
  uint64_t inflated = 0;
  bool compressed = false;
  for (Elf_Scn* scn = elf_nextscn(src.elf, nullptr); scn; scn = elf_nextscn(src.elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) return {};
    if (sh.sh_flags & SHF_COMPRESSED) {
      GElf_Chdr ch;
      if (!gelf_getchdr(scn, &ch)) return {};
      compressed = true;
      inflated += ch.ch_size;
    } else if (sh.sh_type != SHT_NOBITS) {
      inflated += sh.sh_size;
    }
  }
  if (!compressed || inflated > kMaxInflatedBytes) return {};
  const void* id = nullptr;
  ssize_t idSize = dwelf_elf_gnu_build_id(src.elf, &id);
  if (idSize <= 0) return {};
  std::string path = dir + "/" + hexId(id, idSize) + ".debug";
  if (access(path.c_str(), R_OK) == 0) return path;
  if (cacheDir(true) != dir) return {};

  removeStaleCopies(dir);
  // Made under a name of its own and renamed: a reader sees no copy or a whole one.
  static std::atomic<unsigned> serial{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(serial++);
  int out = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) return {};
  bool ok = copyFile(fd, out);
  if (ok) {
    ElfHandle dst{elf_begin(out, ELF_C_RDWR, nullptr)};
    ok = dst.elf != nullptr;
    for (Elf_Scn* scn = ok ? elf_nextscn(dst.elf, nullptr) : nullptr; ok && scn;
         scn = elf_nextscn(dst.elf, scn)) {
      GElf_Shdr sh;
      ok = gelf_getshdr(scn, &sh) != nullptr;
      if (ok && (sh.sh_flags & SHF_COMPRESSED)) ok = elf_compress(scn, 0, 0) >= 0;
    }
    ok = ok && elf_update(dst.elf, ELF_C_WRITE) >= 0;
  }
  ok = close(out) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return {};
  }
  return path;
}

}  // namespace

int findDebuginfoCached(Dwfl_Module* module, void** userdata, const char* modname,
                        Dwarf_Addr base, const char* fileName, const char* debuglinkFile,
                        GElf_Word debuglinkCrc, char** debuginfoFileName) {
  // The copy first: dwfl_standard_find_debuginfo hands libdwfl the Elf of the file it finds
  // (opened to check its build id), which libdwfl then keeps whatever descriptor is returned.
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int idSize = dwfl_module_build_id(module, &bits, &vaddr);
  std::string dir = idSize > 0 ? cacheDir(false) : std::string();
  if (!dir.empty()) {
    std::string path = dir + "/" + hexId(bits, idSize) + ".debug";
    int cached = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (cached >= 0) {
      if (char* name = strdup(path.c_str())) {
        *debuginfoFileName = name;
        return cached;
      }
      close(cached);
    }
  }
  int fd = dwfl_standard_find_debuginfo(module, userdata, modname, base, fileName, debuglinkFile,
                                        debuglinkCrc, debuginfoFileName);
  // This session reads the file as found; the copy serves the next ones.
  if (fd >= 0 && !dir.empty()) inflatedCopy(fd, dir);
  return fd;
}

}  // namespace heapman::replay::detail
