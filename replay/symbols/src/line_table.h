// LineTable: one compile unit's line table (.debug_line, DWARF 2 to 5) read from the bytes libdw
// has loaded, with the answers libdw 0.188's dwarf_getsrc_die, dwarf_lineno and dwarf_filesrc
// give. libdw's dwarf_getsrclines builds 40-byte rows for every line, joins every file name of
// the table, keeps them all for the Dwarf's life and sorts the rows with qsort; this keeps 16
// bytes a row, joins a file name when it is asked for, and sorts sequences as whole runs.
//
// What libdw does, followed here byte for byte:
// - Rows sorted by address; at one address an end_sequence row before the others, otherwise
//   the order they were written in (a stable sort); the last row is made an end_sequence.
// - A lookup takes the last row at or below the address; none when that is an end_sequence.
// - File names: DWARF 2-4 number the header's files from 1 (file 0 is "???"), directory 0 is
//   the unit's DW_AT_comp_dir (a relative name stays as it is without one); DWARF 5 numbers them
//   from 0 (entry 0 is file 0) with directory 0 from the table. An absolute name is kept whole,
//   a relative one is "dir/name", without normalizing.
// - A value libdw keeps in a narrower field (line in an int, column in 16 bits, discriminator
//   in 24, ISA in 8, is_stmt in 1) makes its whole table invalid when it doesn't fit.
// Anything else it would have to decide (an unknown form in a DWARF 5 entry format, strx forms,
// DW_LNE_define_file, vendor opcodes with meaning, split units, a header libdw rejects or reads
// in its own way, big-endian files) makes read() return false: the caller then asks libdw,
// which says what it makes of the table.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace heapman::replay::detail {

// The sections a line table refers to, as libdw loaded them (decompressed when the file
// compresses them). Empty spans for those the file lacks.
struct LineSections {
  std::span<const uint8_t> line, lineStr, str;
  bool usable = false;  // a little-endian file that is not relocatable

  // Precondition: `dbg` is libdw's, for the thread that calls.
  static LineSections of(Dwarf* dbg);
};

class LineTable {
 public:
  struct Row {
    uint64_t address;
    int32_t line;
    uint32_t file : 31;
    uint32_t endSequence : 1;
  };

  // Reads the table of `cudie`'s unit. False when it can't, or when libdw would find the table
  // invalid: then nothing of it is used.
  bool read(Dwarf_Die* cudie, const LineSections& sections);

  // The row libdw's dwarf_getsrc_die finds for `address`; nullptr when it finds none.
  const Row* find(uint64_t address) const;
  // The file name dwarf_filesrc gives for index `file`; nullptr when out of range. Stays valid
  // as long as the table.
  const std::string* fileName(uint64_t file);

  // How the rows came into libdw's order: as written, by moving whole sequences, or with some
  // sequences interleaving row by row (as those of discarded COMDAT sections do).
  enum class Order { kWritten, kSequences, kSorted };
  Order order() const { return order_; }

  const std::vector<Row>& rows() const { return rows_; }
  size_t fileCount() const { return files_.size(); }

 private:
  struct File {
    // `dir` nullptr: the name alone (absolute, or no directory known).
    const char* dir = nullptr;
    const char* name = nullptr;
    bool joined = false;
    std::string path;
  };

  // `end` narrows from the section's end to the unit's.
  bool readHeader(const uint8_t*& p, const uint8_t*& end, const uint8_t* sectionEnd);
  bool readProgram(const uint8_t* p, const uint8_t* end);
  void sortRows();
  void finishRows();

  // From the CU and the header.
  unsigned addressSize_ = 0, offsetSize_ = 0, version_ = 0;
  const char* compDir_ = nullptr;
  LineSections sections_;
  uint8_t minInstrLength_ = 0, maxOpsPerInstr_ = 1, opcodeBase_ = 0, lineRange_ = 0;
  int8_t lineBase_ = 0;
  const uint8_t* standardLengths_ = nullptr;  // [i]: the operands of standard opcode i (from 1)

  std::vector<File> files_;
  std::vector<Row> rows_;
  std::vector<uint32_t> sequenceStarts_;
  Order order_ = Order::kWritten;  // the first row of each sequence, in written order
};

}  // namespace heapman::replay::detail
