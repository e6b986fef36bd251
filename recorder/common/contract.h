// The contract between heaprec and the recorder module it preloads: the environment variables
// heaprec sets for the program, and the one parser of each value that both sides use (heaprec
// to refuse a bad option before anything runs, the module to read what heaprec set).
//
// Header-only and free of the heap: the module parses these in its constructor, before the
// program's own start-up, where an allocation would be recorded (or recurse into the hooks).
#pragma once

#include <cstddef>
#include <cstdint>

namespace heapman::rec::env {

inline constexpr char kOutput[] = "HEAPMAN_OUTPUT";          // the log heaprec was asked for
inline constexpr char kRootPid[] = "HEAPMAN_ROOT_PID";       // the process that writes kOutput
inline constexpr char kMessages[] = "HEAPMAN_MESSAGES";      // heaprec's FIFO for messages
inline constexpr char kDepth[] = "HEAPMAN_DEPTH";            // --depth
inline constexpr char kTimeResolutionNs[] = "HEAPMAN_TIME_RES_NS";       // --time-resolution
inline constexpr char kAllocTimeEvery[] = "HEAPMAN_ALLOC_TIME_EVERY";    // --alloc-time-every
inline constexpr char kUnwind[] = "HEAPMAN_UNWIND";          // --unwind fp|auto|dwarf
inline constexpr char kRamDumps[] = "HEAPMAN_RAM_DUMPS";     // --ram-dumps (unset: off)
inline constexpr char kFollowExec[] = "HEAPMAN_FOLLOW_EXEC"; // "1" (--follow-exec), "wrapper"
inline constexpr char kMonoNoStacks[] = "HEAPMAN_MONO_NOSTACKS";  // --mono-stacks off
inline constexpr char kMonoMalloc[] = "HEAPMAN_MONO_MALLOC";      // --mono-malloc
// Set by hand, not by heaprec options.
inline constexpr char kRingMb[] = "HEAPMAN_RING_MB";          // ring size per thread, MiB
inline constexpr char kStats[] = "HEAPMAN_STATS";             // the recorder's costs, at exit
// libgc's mark bits: "objects" reads them one marked object at a time
// (GC_enumerate_reachable_objects_inner) even where its block headers are found; "compare" reads
// them from the headers and compares each snapshot with the enumeration (counts at exit).
inline constexpr char kGcMarks[] = "HEAPMAN_GC_MARKS";
inline constexpr char kMonoAllMethods[] = "HEAPMAN_MONO_ALL_METHODS";  // shadow every method
// Managed stacks by walking instead of the shadow stack: "fast" (the fast walk, the runtime's
// where it cannot prove its result) or "check" (both at every allocation, compared; the
// runtime's recorded). Counts at exit.
inline constexpr char kMonoWalk[] = "HEAPMAN_MONO_WALK";

// Limits of the numeric options, inclusive.
inline constexpr uint32_t kMaxDepth = 256;
inline constexpr uint32_t kMaxAllocTimeEvery = 1024;

// A whole number in [low, high], all of `text` (no sign, no space); false otherwise.
constexpr bool parseNumber(const char* text, uint64_t low, uint64_t high, uint64_t& out) {
  if (!text || !*text) return false;
  uint64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  if (v < low || v > high) return false;
  out = v;
  return true;
}

// When RAM dumps are taken (--ram-dumps): off, every (collection), every:N (every Nth, N >= 1),
// event:NAME (the first collection after each custom event NAME, 1 to 255 bytes).
struct RamDumps {
  enum class Kind : uint8_t { kOff, kEvery, kEveryNth, kAtEvent };
  Kind kind = Kind::kOff;
  uint32_t every = 1;
  const char* event = nullptr;  // into the parsed text
  size_t eventLength = 0;
};

inline constexpr size_t kMaxEventName = 255;

// Parses a --ram-dumps value; false (and `out` unchanged) when malformed. Null or empty: off.
constexpr bool parseRamDumps(const char* text, RamDumps& out) {
  auto startsWith = [](const char* s, const char* prefix) {
    for (; *prefix; ++s, ++prefix)
      if (*s != *prefix) return false;
    return true;
  };
  RamDumps r;
  if (!text || !*text || (startsWith(text, "off") && !text[3])) {
    out = r;
    return true;
  }
  if (startsWith(text, "every") && !text[5]) {
    r.kind = RamDumps::Kind::kEvery;
  } else if (startsWith(text, "every:")) {
    uint64_t n = 0;
    if (!parseNumber(text + 6, 1, UINT32_MAX, n)) return false;
    r.kind = RamDumps::Kind::kEveryNth;
    r.every = static_cast<uint32_t>(n);
  } else if (startsWith(text, "event:")) {
    size_t len = 0;
    while (text[6 + len]) ++len;
    if (len == 0 || len > kMaxEventName) return false;
    r.kind = RamDumps::Kind::kAtEvent;
    r.event = text + 6;
    r.eventLength = len;
  } else {
    return false;
  }
  out = r;
  return true;
}

}  // namespace heapman::rec::env
