// heapman strip LOG -o OUT: a copy of the log without its RAM dumps, for a bug report or a
// colleague. The dumps hold the bytes of every live object of the recorded program (strings,
// keys, tokens): sharing a log with dumps shares the program's memory. The copy keeps every other
// record in order and verifies; every query that does not read memory (blame, diff, churn, gcs,
// types, leaks without dumps...) answers as on the original. Written beside OUT and renamed into
// place, so a failed copy leaves no half-written OUT and the original is never touched.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/strip.h"
#include "heapman/logformat/writer.h"
#include "output.h"
#include "verbs.h"

namespace heapman::cli {

namespace {

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("output,o", po::value<std::string>()->value_name("FILE"),
                  "the copy without RAM dumps (required; never the log itself)");
}

bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

int run(const std::string& path, const VerbOptions& vm) {
  if (!vm.count("output"))
    throw UsageError("give -o FILE, the copy to write\nusage: heapman strip LOG -o FILE");
  const std::string out = vm["output"].as<std::string>();
  if (out == "-" || sameFile(path, out))
    throw UsageError("-o " + out + " would replace the log itself: name another file");
  log::LogReader reader = log::LogReader::open(path, log::ReadMode::kIntactPrefix);
  if (const auto& corruption = reader.end().corruption) {
    std::fprintf(stderr,
                 "heapman strip: %s is damaged (%s); run `heapman verify %s` for details. "
                 "Nothing written.\n",
                 path.c_str(), corruption->what(), path.c_str());
    return kExitBadLog;
  }
  const std::string tmp = out + ".part";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw OutputError("writing " + out + " failed: " + std::strerror(errno));
  log::FdSink sink(fd);
  log::StripResult r;
  try {
    r = log::stripRamDumps(reader, sink);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  bool closed = ::close(fd) == 0;
  if (!r.ok || !closed || std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::string why = !r.ok ? r.error : std::strerror(errno);
    ::unlink(tmp.c_str());
    throw OutputError("writing " + out + " failed: " + why);
  }
  std::printf("wrote %s: %" PRIu64 " records; ", out.c_str(), r.records);
  if (r.ramChunks)
    std::printf("RAM dumps left out: %" PRIu64 " chunks, %.1f MiB (the program's memory)\n",
                r.ramChunks, static_cast<double>(r.ramBytes) / 1048576.0);
  else
    std::printf("the log had no RAM dumps\n");
  if (!r.sourceComplete)
    std::printf("note: %s ends early (%s); the copy holds what it kept, and is complete\n",
                path.c_str(), reader.end().reason.c_str());
  return kExitOk;
}

}  // namespace

extern const Verb kStripVerb{
    .name = "strip",
    .synopsis = "-o FILE",
    .summary = "copy a log without its RAM dumps (the program's memory), to share it",
    .options = options,
    .runFile = run,
    .needs = {{"", "output"}},
    .inShell = false};

}  // namespace heapman::cli
