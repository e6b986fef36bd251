// heapman: explore HeapMan transaction logs.
//   heapman info LOG [--json]     header, record counts, GCs, events, complete or truncated
//   heapman verify LOG            every checksum and record; non-zero exit at the first bad chunk
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "commands.h"

namespace {

struct Verb {
  const char* name;
  int (*run)(const heapman::cli::Args&);
  const char* summary;
};

constexpr Verb kVerbs[] = {
    {"info", heapman::cli::runInfo, "summarize a log: header, record counts, GCs, custom events"},
    {"verify", heapman::cli::runVerify, "check every chunk of a log; exit 1 naming the first bad one"},
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: heapman VERB [options] LOG\n\n"
               "verbs:\n");
  for (const Verb& v : kVerbs) std::fprintf(out, "  %-8s %s\n", v.name, v.summary);
  std::fprintf(out, "\n'heapman VERB --help' shows a verb's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
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
    std::printf("heapman 0.1.0\n");
    return heapman::cli::kExitOk;
  }
  heapman::cli::Args args(argv + 2, argv + argc);
  for (const Verb& v : kVerbs) {
    if (verb != v.name) continue;
    try {
      return v.run(args);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "heapman %s: %s\n", v.name, e.what());
      return heapman::cli::kExitBadLog;
    }
  }
  std::fprintf(stderr, "heapman: unknown verb '%s'\n\n", verb.c_str());
  usage(stderr);
  return heapman::cli::kExitUsage;
}
