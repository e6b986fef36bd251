// The default leaf-exclusion list, embedded into the binary at build time from
// replay/data/default_exclusions.txt (replay/report/embed.cmake): what heapman uses when no
// installed copy of the file is found next to it, so that a binary copied anywhere charges
// allocations to the same frames.
#pragma once

#include <string>

namespace heapman::cli {

const std::string& defaultExclusionsText();

}  // namespace heapman::cli
