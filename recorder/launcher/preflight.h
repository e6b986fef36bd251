// What heaprec checks before it runs anything (heaprec.cpp): where the recorder module is, which
// file PROGRAM names and whether it can be recorded, whether the log can be written, and what a
// path names (to tell afterwards whether a log was written).
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <string>

namespace heaprec {

// The directory of the heaprec executable; the preload module beside it or in
// ../lib/heapman (findModule; empty: not found).
std::string selfDir();
std::string findModule();
std::string absolute(const std::string& path);
// The file `name` runs as execvp would find it (through PATH); empty when none.
std::string resolveProgram(const std::string& name);

// What kind of file a program is, as far as preloading goes.
struct ProgramKind {
  bool elf = false, dynamic = false;  // an ELF file; with an interpreter (ld.so): preloadable
  std::string interpreter;            // a script's "#!" line
  std::string text;                   // a script's first 4 KiB
};
ProgramKind inspectProgram(const std::string& path);

// What a path names, to tell afterwards whether the recorder wrote it (a run whose program
// never started recording leaves an earlier run's log as it was).
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  timespec mtime{};
  off_t size = 0;
  bool regular = false;
  bool operator==(const FileId& o) const {
    return exists == o.exists && dev == o.dev && ino == o.ino && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && size == o.size;
  }
};
FileId identify(const std::string& path);

// Says why the log cannot be written, before anything runs; empty when it can be. Leaves the
// file as it was.
std::string cannotWrite(const std::string& output);

}  // namespace heaprec
