// heapman info LOG [--json FILE|-]: the log's header, record counts, heaps, GCs, custom events.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "heapman/logformat/reader.h"
#include "heapman/logformat/summary.h"
#include "json.h"
#include "output.h"
#include "verbs.h"

namespace heapman::cli {

namespace {

using namespace heapman::log;

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

std::string runtimes(const Header& h) {
  std::string s;
  for (const auto& r : h.runtimes) {
    s += (s.empty() ? "" : ", ") + std::string(runtimeKindName(r.kind));
    if (!r.version.empty()) s += " " + r.version;
  }
  return s.empty() ? "none recorded" : s;
}

std::string utc(int64_t ns) {
  time_t t = static_cast<time_t>(ns / 1000000000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char b[64];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return b;
}

std::string json(const LogReader& r, const LogSummary& s) {
  const Header& h = r.header();
  JsonObject header;
  std::string cmd = "[";
  for (size_t i = 0; i < h.commandLine.size(); ++i)
    cmd += (i ? "," : "") + jsonString(h.commandLine[i]);
  cmd += "]";
  std::string rts = "[";
  for (size_t i = 0; i < h.runtimes.size(); ++i)
    rts += (i ? "," : "") + JsonObject()
                               .str("kind", runtimeKindName(h.runtimes[i].kind))
                               .str("version", h.runtimes[i].version)
                               .str();
  rts += "]";
  JsonObject options;
  for (const auto& [k, v] : h.options) options.str(k, v);
  header.str("recorder_version", h.recorderVersion)
      .num("pid", h.pid)
      .num("parent_pid", h.parentPid)
      .str("executable", h.executable)
      .raw("command_line", cmd)
      .raw("start_wall_time_ns", std::to_string(h.startWallTimeNs))
      .num("pointer_size", h.pointerSize)
      .raw("runtimes", rts)
      .raw("options", options.str());

  JsonObject records;
  for (size_t k = 0; k < kRecordKindCount; ++k) records.num(recordKindName(k), s.records[k]);
  JsonObject heaps;
  uint64_t frees = 0;
  for (int k = 0; k < kHeapKindCount; ++k) {
    const HeapStats& hs = s.heaps[k];
    frees += hs.frees;
    if (!hs.allocs && !hs.frees && !hs.reallocs) continue;
    heaps.raw(heapKindName(static_cast<HeapKind>(k)), JsonObject()
                                                          .num("allocs", hs.allocs)
                                                          .num("bytes", hs.bytes)
                                                          .num("actual_bytes", hs.actualBytes)
                                                          .num("frees", hs.frees)
                                                          .num("reallocs", hs.reallocs)
                                                          .str());
  }
  JsonObject byName;
  uint64_t customTotal = 0;
  for (const auto& [name, n] : s.customEvents) {
    byName.num(name, n);
    customTotal += n;
  }
  return JsonObject()
      .str("file", r.name())
      .raw("format", JsonObject().num("major", r.major()).num("minor", r.minor()).str())
      .boolean("complete", r.end().complete)
      .str("truncated_reason", r.end().reason)
      .num("file_bytes", r.fileSize())
      .raw("header", header.str())
      .raw("chunks", JsonObject()
                         .num("total", s.chunks)
                         .num("records", s.recordChunks)
                         .num("ram_dump", s.ramChunks)
                         .num("unknown", s.unknownChunks)
                         .num("stored_bytes", s.storedBytes)
                         .num("raw_bytes", s.rawBytes)
                         .str())
      .raw("records", records.str())
      .num("events", s.events)
      .num("first_seq", s.firstSeq)
      .num("last_seq", s.lastSeq)
      .num("duration_ns", s.durationNs)
      .raw("heaps", heaps.str())
      .num("frees", frees)
      .num("gcs", s.gcs)
      .num("collected_objects", s.collectedObjects)
      .raw("custom_events", JsonObject().num("total", customTotal).raw("by_name", byName.str()).str())
      .num("frame_marks", s.records[Record(std::in_place_type<FrameMark>).index()])
      .num("lost_events", s.lostEvents)
      .raw("lost_events_known", r.end().complete ? "true" : "false")
      .raw("ram_dumps", JsonObject()
                            .num("segments", s.ramSegments)
                            .num("bytes", s.ramBytes)
                            .num("deduplicated_segments", s.ramDedupedSegments)
                            .str())
      .str() + "\n";
}

void text(const LogReader& r, const LogSummary& s) {
  const Header& h = r.header();
  std::printf("log        %s (%" PRIu64 " bytes, format %u.%u)\n", r.name().c_str(), r.fileSize(),
              r.major(), r.minor());
  if (r.end().complete)
    std::printf("status     complete\n");
  else
    std::printf("status     TRUNCATED: %s\n", r.end().reason.c_str());
  std::printf("recorder   %s, pid %u%s, started %s\n", h.recorderVersion.c_str(), h.pid,
              h.parentPid ? (" (forked from " + std::to_string(h.parentPid) + ")").c_str() : "",
              utc(h.startWallTimeNs).c_str());
  std::printf("program    %s\n", h.commandLine.empty() ? h.executable.c_str()
                                                       : joined(h.commandLine).c_str());
  std::printf("runtimes   %s\n", runtimes(h).c_str());
  if (!h.options.empty()) {
    std::string o;
    for (const auto& [k, v] : h.options) o += (o.empty() ? "" : " ") + k + "=" + v;
    std::printf("options    %s\n", o.c_str());
  }
  std::printf("duration   %.3f s\n", static_cast<double>(s.durationNs) / 1e9);
  std::printf("chunks     %" PRIu64 " (records %" PRIu64 ", RAM dump %" PRIu64 ", unknown %" PRIu64
              "); %.1f KiB stored, %.1f KiB raw\n",
              s.chunks, s.recordChunks, s.ramChunks, s.unknownChunks, s.storedBytes / 1024.0,
              s.rawBytes / 1024.0);
  std::printf("events     %" PRIu64 " (seq %" PRIu64 "..%" PRIu64 ")\n", s.events, s.firstSeq,
              s.lastSeq);
  std::printf("\nrecords\n");
  for (size_t k = 0; k < kRecordKindCount; ++k)
    if (s.records[k]) std::printf("  %-14s %12" PRIu64 "\n", recordKindName(k), s.records[k]);
  std::printf("\n  %-16s %12s %14s %12s %10s\n", "heap", "allocs", "bytes", "frees", "reallocs");
  for (int k = 0; k < kHeapKindCount; ++k) {
    const HeapStats& hs = s.heaps[k];
    if (!hs.allocs && !hs.frees && !hs.reallocs) continue;
    std::printf("  %-16s %12" PRIu64 " %14" PRIu64 " %12" PRIu64 " %10" PRIu64 "\n",
                heapKindName(static_cast<HeapKind>(k)), hs.allocs, hs.bytes, hs.frees, hs.reallocs);
  }
  std::printf("\nGCs        %" PRIu64 ", collected objects %" PRIu64 "\n", s.gcs,
              s.collectedObjects);
  std::printf("frames     %" PRIu64 "\n", s.records[Record(std::in_place_type<FrameMark>).index()]);
  std::printf("custom     ");
  if (s.customEvents.empty()) std::printf("none");
  for (const auto& [name, n] : s.customEvents) std::printf("%s x%" PRIu64 "  ", name.c_str(), n);
  // A log that ends early (killed, disk full, recording stopped) cannot say what came after
  // its end: the count of what was lost is then unknown, not 0.
  if (r.end().complete)
    std::printf("\nlost       %" PRIu64 " events\n", s.lostEvents);
  else
    std::printf("\nlost       unknown: the log ends early, and what the program did after its "
                "end is not in it (%" PRIu64 " events counted lost before that)\n",
                s.lostEvents);
  if (s.ramSegments)
    std::printf("RAM dumps  %" PRIu64 " segments, %.1f KiB, %" PRIu64 " deduplicated\n",
                s.ramSegments, s.ramBytes / 1024.0, s.ramDedupedSegments);
}

void options(po::options_description& o, po::positional_options_description&) {
  o.add_options()("json", po::value<std::string>()->value_name("FILE|-"),
                  "write JSON to FILE ('-': stdout, instead of the text)");
}

int run(const std::string& path, const VerbOptions& vm) {
  std::string jsonTo = vm.count("json") ? vm["json"].as<std::string>() : "";
  std::error_code ec;
  if (jsonTo != "-" && !jsonTo.empty() && std::filesystem::equivalent(jsonTo, path, ec))
    throw UsageError("--json " + jsonTo + " is the log: give the JSON another name");
  LogReader reader = [&] {
    try {
      return LogReader::open(path);
    } catch (const FormatError& e) {
      throw std::runtime_error(path + ": " + e.what());
    }
  }();
  LogSummary s;
  try {
    s = summarize(reader);
  } catch (const FormatError& e) {
    throw std::runtime_error(path + ": " + e.what() +
                             "\n(run `heapman verify` for details; the chunks before it are intact)");
  }
  // As the other verbs: the text unless the JSON goes to stdout.
  if (jsonTo != "-") text(reader, s);
  if (!jsonTo.empty()) writeOutput(jsonTo, json(reader, s));
  return kExitOk;
}

}  // namespace

// `--json` was a flag (JSON on stdout): without a value it is still read so, for one release.
extern const Verb kInfoVerb{
    .name = "info",
    .synopsis = "[--json FILE|-]",
    .summary = "summarize a log: header, record counts, GCs, custom events",
    .options = options,
    .runFile = run,
    .renamed = {{.old = "json", .now = "json", .bare = "-"}}};

}  // namespace heapman::cli
