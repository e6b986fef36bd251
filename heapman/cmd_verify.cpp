// heapman verify LOG: reads every chunk, checks checksums, decompression, record decoding,
// record counts, the footer, and the rules every query applies too (log::LogCheck: chunks that
// continue each other's sequence numbers, so none is missing, repeated or out of order;
// addresses, stack node ids, RAM dump references). Exit 0 when all is intact, 1 naming the
// first bad chunk otherwise. A truncated log (no footer) verifies up to its last intact chunk
// and is reported, with exit 0: it is a valid, if partial, log.
#include <cinttypes>
#include <cstdio>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/summary.h"
#include "verbs.h"

namespace heapman::cli {

namespace {

void options(po::options_description&, po::positional_options_description&) {}

int run(const std::string& path, const VerbOptions&) {
  try {
    // Read as the queries read it: the scan stops at a corrupt chunk header or footer, and the
    // chunks before it are checked in full first, so the error is the first bad chunk's
    // whether the headers or the records show it.
    log::LogReader reader = log::LogReader::open(path, log::ReadMode::kIntactPrefix);
    log::LogSummary s = log::summarize(reader);
    if (const auto& corruption = reader.end().corruption) throw *corruption;
    std::printf("%s: OK, %" PRIu64 " chunks, %" PRIu64 " events verified; %s\n", path.c_str(),
                s.chunks, s.events,
                reader.end().complete ? "complete" : ("truncated: " + reader.end().reason).c_str());
    return kExitOk;
  } catch (const log::FormatError& e) {
    std::fprintf(stderr, "%s: FAILED [%s] %s\n", path.c_str(), log::errorCodeName(e.code()),
                 e.what());
    return kExitBadLog;
  }
}

}  // namespace

extern const Verb kVerifyVerb{
    .name = "verify",
    .synopsis = "",
    .summary = "check every chunk of a log; exit 1 naming the first bad one",
    .options = options,
    .runFile = run};

}  // namespace heapman::cli
