// What the module's start-up (module.cpp) and the custom-event entry points call in the layers
// of hooks/: each runtime layer where it is built (HEAPMAN_WITH_BDWGC, HEAPMAN_WITH_MONO: the
// collector's headers were found), a stand-in where it is not.
#pragma once

#include <cstdint>

#include "../core/recorder.h"

namespace heapman::rec {

// process.cpp: fatal-signal handlers that flush the log, then chain to the program's; the
// calling thread's alternate signal stack.
void installCrashHandlers();

#if HEAPMAN_WITH_BDWGC
// bdwgc/init.cpp: hooks the program's libgc, if it has one. Once at start-up, after recording is on
// and before the writer thread starts.
void initBdwgc();
#else
inline void initBdwgc() {}
#endif

#if HEAPMAN_WITH_MONO
// mono/init.cpp: notes a Mono program (its version, whether its own mallocs are recorded); the
// profiler module itself starts when Mono loads it (--profile=heapman). Once at start-up, before
// recording starts.
void initMono();
// begin() for an event that carries the calling thread's managed stack, when the thread runs
// managed code under the Mono layer; null otherwise (the caller takes a native one).
RawEvent* beginWithManagedStack(Ring*& r, Kind kind, uint8_t heap, uint32_t extraLen);
#else
inline void initMono() {}
inline RawEvent* beginWithManagedStack(Ring*&, Kind, uint8_t, uint32_t) { return nullptr; }
#endif

}  // namespace heapman::rec
