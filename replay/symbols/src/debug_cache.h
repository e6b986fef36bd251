// A separate debug file whose DWARF sections are compressed (SHF_COMPRESSED: Debian's -dbg and
// -dbgsym packages, libc6-dbg among them) costs an inflate of all of them each time libdw opens
// it: ~85 ms of CPU for libc's 10 MB, most of what symbolizing a typical query's frames costs.
// The first use keeps a copy with the sections inflated under the user's cache directory
// ($XDG_CACHE_HOME/heapman/debug/, else ~/.cache/heapman/debug/), named by the file's GNU build
// id; later opens map that copy instead.
#pragma once

#include <elfutils/libdwfl.h>

namespace heapman::replay::detail {

// A Dwfl_Callbacks::find_debuginfo: the inflated copy of the module's debug file when the cache
// has one for its build id; else dwfl_standard_find_debuginfo's file, and when that one has
// compressed sections its copy is made for the next session (written to a temporary name and
// renamed, so concurrent makers don't see half a file). Any failure on the cache's side gives
// the file as found, unchanged.
int findDebuginfoCached(Dwfl_Module* module, void** userdata, const char* modname,
                        Dwarf_Addr base, const char* fileName, const char* debuglinkFile,
                        GElf_Word debuglinkCrc, char** debuginfoFileName);

}  // namespace heapman::replay::detail
