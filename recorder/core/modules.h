// The process's loaded modules (dl_iterate_phdr), for ModuleLoad/ModuleUnload records. Called by
// the writer thread only (scanModules, serializeModules) or off the event path
// (framelessRanges).
#pragma once

#include <link.h>

#include <map>
#include <string>
#include <vector>

#include "heapman/logformat/records.h"
#include "recorder.h"

namespace heapman::rec {

// Every loaded module now, keyed by load bias. The main program's path comes from
// /proc/self/exe; modules without a file (the vDSO) keep their soname.
using ModuleMap = std::map<uint64_t, log::ModuleLoad>;  // by load base
ModuleMap scanModules();

// The list as bytes, to travel through a ring (hook thread to writer thread), and back.
std::string serializeModules(const std::map<uint64_t, log::ModuleLoad>& mods);
std::map<uint64_t, log::ModuleLoad> deserializeModules(const uint8_t* data, size_t size);

// The code of a loaded module that does not keep frame pointers, judged from the function
// starts its .eh_frame_hdr lists (PT_GNU_EH_FRAME, read in place): up to kFramePointerSamples
// of them, evenly spread, vote. A function keeps the frame pointer when its call-frame
// instructions make rbp the CFA register or its code starts with `push %rbp; mov %rsp,%rbp`
// (optionally after endbr64); FDEs without instructions (leaf code: never a caller's frame) or
// starting with a def_cfa (the PLT, .cold fragments) do not vote. When fewer than half keep it,
// writes the module's executable segments to `out` and returns how many (<= max); otherwise 0,
// also when the module has no such table or one in an encoding this does not read
// (other than datarel|sdata4 pairs with a udata4 count): such modules count as keeping them.
// Does not allocate, lock or fault (every byte read lies inside one of the module's PT_LOADs).
// `ehHdr`, when given and the module is frameless: its .eh_frame_hdr (parseFrameRule, unwind.h).
inline constexpr uint32_t kFramePointerSamples = 256;
uint32_t framelessRanges(const dl_phdr_info* pi, CodeRange* out, uint32_t max,
                         uintptr_t* ehHdr = nullptr);

}  // namespace heapman::rec
