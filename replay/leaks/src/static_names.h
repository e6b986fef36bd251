// Names of static variables: the data symbol (STT_OBJECT) of a recorded module that covers an
// address, read from the module's ELF symbol table (the Symbolizer names code only: it looks
// up return addresses, one byte back, among function symbols).
//
// A module whose file is missing, has no symbol table, or whose GNU build id differs from the
// one the log recorded gives no name (never an error). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "heapman/logformat/records.h"

namespace heapman::leaks {

class StaticNames {
 public:
  explicit StaticNames(const std::vector<log::ModuleLoad>& modules) : modules_(modules) {}
  // "g_history", "g_score_changed+0x8", or "" when no data symbol covers the address.
  std::string name(uint64_t address);
  // The file name (no directory) of the module whose segments cover the address, or "".
  std::string moduleFile(uint64_t address) const;

 private:
  struct Symbol {
    uint64_t lo, hi;
    std::string name;
  };
  const std::vector<Symbol>& symbols(size_t module);
  int moduleAt(uint64_t address) const;  // index into modules_, or -1
  const std::vector<log::ModuleLoad>& modules_;
  std::map<size_t, std::vector<Symbol>> loaded_;
};

}  // namespace heapman::leaks
