// heapman: explore HeapMan transaction logs.
//   heapman VERB LOG [options]    every verb of the table in verbs.cpp (heapman --help lists them
//                                 with a line each), one cmd_<verb>.cpp each
//   heapman LOG | heapman shell [LOG]   the interactive shell (shell.cpp)
//   heapman --version             the project's version (CMake's PROJECT_VERSION)
//   heapman --list-options        (not in --help) the verb table as JSON, for the tests
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "commands.h"
#include "heapman/logformat/reader.h"
#include "output.h"
#include "verbs.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: heapman VERB [options] LOG\n"
               "       heapman LOG            (interactive shell)\n\n"
               "verbs:\n");
  for (const heapman::cli::Verb* v : heapman::cli::verbs())
    std::fprintf(out, "  %-8s %s\n", v->name, v->summary);
  std::fprintf(out,
               "\npoints: start, end, gc:N, NAME#K (K-th custom event NAME), NAME, frame:F, seq:S\n"
               "'heapman VERB --help' shows a verb's options.\n");
}

int run(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return heapman::cli::kExitUsage;
  }
  std::string verb = argv[1];
  if (verb == "-h" || verb == "--help" || verb == "help") {
    usage(stdout);
    return heapman::cli::kExitOk;
  }
  if (verb == "--version") {
    std::printf("heapman %s\n", HEAPMAN_VERSION);
    return heapman::cli::kExitOk;
  }
  if (verb == "--list-options") {
    std::fputs(heapman::cli::listOptionsJson().c_str(), stdout);
    return heapman::cli::kExitOk;
  }
  heapman::cli::Args args(argv + 2, argv + argc);
  if (const heapman::cli::Verb* v = heapman::cli::findVerb(verb))
    return heapman::cli::runOneShot(*v, args);
  if (struct stat st; ::stat(argv[1], &st) == 0) {
    if (!S_ISREG(st.st_mode)) {  // a FIFO, device or directory: say why, do not wait on it
      try {
        (void)heapman::log::LogReader::open(argv[1]);
      } catch (const heapman::log::FormatError& e) {
        std::fprintf(stderr, "heapman: %s: %s\n", argv[1], e.what());
      }
      return heapman::cli::kExitBadLog;
    }
    heapman::cli::Args shellArgs(argv + 1, argv + argc);
    return heapman::cli::runOneShot(*heapman::cli::findVerb("shell"), shellArgs);
  }
  std::fprintf(stderr, "heapman: unknown verb '%s'\n\n", verb.c_str());
  usage(stderr);
  return heapman::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  int rc;
  try {
    rc = run(argc, argv);
  } catch (...) {
    rc = heapman::cli::reportError(argc > 1 ? argv[1] : "");
  }
  // printf output of info/verify/usage: a full disk or a closed pipe is an error too.
  try {
    heapman::cli::flushStdout();
  } catch (...) {
    int out = heapman::cli::reportError(argc > 1 ? argv[1] : "");
    if (rc == heapman::cli::kExitOk) rc = out;
  }
  return rc;
}
