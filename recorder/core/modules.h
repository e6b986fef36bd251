// The process's loaded modules (dl_iterate_phdr), for ModuleLoad/ModuleUnload records. Called by
// the writer thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "heapman/logformat/records.h"

namespace heapman::rec {

// Every loaded module now, keyed by load bias. The main program's path comes from
// /proc/self/exe; modules without a file (the vDSO) keep their soname.
std::map<uint64_t, log::ModuleLoad> scanModules();

// The list as bytes, to travel through a ring (hook thread to writer thread), and back.
std::string serializeModules(const std::map<uint64_t, log::ModuleLoad>& mods);
std::map<uint64_t, log::ModuleLoad> deserializeModules(const uint8_t* data, size_t size);

}  // namespace heapman::rec
