// What heaprec checks before it runs anything (preflight.h).
#include "preflight.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "heapman/logformat/private_file.h"

namespace heaprec {

std::string selfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// The preload module: beside heaprec in a build tree, under ../lib/heapman when installed.
std::string findModule() {
  std::string dir = selfDir();
  for (const std::string& c : {dir + "/" HEAPMAN_PRELOAD_NAME,
                               dir + "/" HEAPMAN_PRELOAD_RELDIR "/" HEAPMAN_PRELOAD_NAME}) {
    if (access(c.c_str(), R_OK) == 0) {
      char real[PATH_MAX];
      return realpath(c.c_str(), real) ? std::string(real) : c;
    }
  }
  return {};
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
}

// The file execvp would run for `name`: itself when it has a slash, else the first executable
// of that name on PATH. Empty when there is none (execvp then says why).
std::string resolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = end > at ? dirs.substr(at, end - at) : ".";
    std::string candidate = dir + "/" + name;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
    at = end + 1;
  }
  return {};
}

ProgramKind inspectProgram(const std::string& path) {
  ProgramKind kind;
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.rfind("#!", 0) == 0) {
    size_t eol = head.find('\n');
    kind.interpreter = head.substr(2, eol == std::string::npos ? std::string::npos : eol - 2);
    kind.text = head;
    return kind;
  }
  if (head.size() < sizeof(Elf64_Ehdr) || head.compare(0, 4, ELFMAG) != 0) return kind;
  kind.elf = true;
  Elf64_Ehdr eh;
  std::memcpy(&eh, head.data(), sizeof eh);
  if (head[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
    kind.dynamic = true;  // not ours to judge: let the loader say
    return kind;
  }
  in.clear();
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof ph));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) break;
    if (ph.p_type == PT_INTERP) kind.dynamic = true;
  }
  return kind;
}

FileId identify(const std::string& path) {
  FileId id;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return id;
  id.exists = true;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.mtime = st.st_mtim;
  id.size = st.st_size;
  id.regular = S_ISREG(st.st_mode);
  return id;
}

// Says why the log cannot be written, before anything runs; empty when it can be. Leaves the
// file as it was: an existing one is opened without truncation, a new one is created to see
// that it can be, then removed again.
std::string cannotWrite(const std::string& output) {
  bool existed = access(output.c_str(), F_OK) == 0;
  int fd = open(output.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK | (existed ? 0 : O_CREAT | O_EXCL),
                heapman::log::kPrivateMode);
  if (fd >= 0) {
    close(fd);
    if (!existed) unlink(output.c_str());
    return {};
  }
  int err = errno;
  std::string dir = output.substr(0, output.rfind('/'));
  if (dir.empty()) dir = "/";
  struct stat st;
  bool dirExists = stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  std::string why = std::strerror(err);
  if (err == ENOENT)
    why = dirExists ? "no file can be created in " + dir + " (" + why +
                          "; a special file system such as /proc or /sys?)"
                    : "the directory " + dir + " does not exist";
  if (err == EROFS) why = "the file system holding " + dir + " is read-only";
  if (err == EACCES) why = "permission denied (no write access to it or to " + dir + ")";
  if (err == EISDIR) why = "it is a directory";
  return "heaprec: cannot write the log " + output + ": " + why +
         "; choose another place with -o FILE\n";
}

}  // namespace heaprec
