// Checks a module's file before libdw sees it: present, a regular file, a whole ELF object, and
// the build id the recorder saw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace heapman::replay::detail {

// Empty when the file can be used; otherwise why not ("module file not found", "not an ELF
// file", "truncated ELF file", "build id differs", ...). `recordedBuildId` empty: not checked.
// Never throws.
std::string checkModuleFile(const std::string& path, const std::vector<uint8_t>& recordedBuildId);

}  // namespace heapman::replay::detail
