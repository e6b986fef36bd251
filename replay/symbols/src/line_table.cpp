#include "line_table.h"

#include <dwarf.h>
#include <gelf.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>

#include "dwarf_bytes.h"

namespace heapman::replay::detail {

namespace {

// libdw reads a LEB128 number of at most 10 bytes (64 bits); a longer one it reads its own way.
constexpr ptrdiff_t kMaxLeb = 10;

bool boundedUleb(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  const uint8_t* start = p;
  return uleb(p, end, v) && p - start <= kMaxLeb;
}

// A value libdw reads into an `unsigned int` (truncating a larger one).
bool uleb32(const uint8_t*& p, const uint8_t* end, uint32_t& v) {
  uint64_t u = 0;
  if (!boundedUleb(p, end, u) || u > UINT32_MAX) return false;
  v = static_cast<uint32_t>(u);
  return true;
}

// The operands of standard opcodes 1 to 12 (DW_LNS_copy to DW_LNS_set_isa): libdw rejects a
// table that says otherwise for one it interprets.
constexpr uint8_t kStandardLengths[13] = {0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};

// The string of a DWARF 5 entry-format field as libdw's dwarf_formstring gives it, and the
// field's size. False for a form read here in no other way (libdw then decides).
bool formString(unsigned form, const uint8_t*& p, const uint8_t* end, unsigned offsetSize,
                const LineSections& s, const char*& out) {
  if (form == DW_FORM_string) {
    const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
    if (!nul) return false;
    out = reinterpret_cast<const char*>(p);
    p = static_cast<const uint8_t*>(nul) + 1;
    return true;
  }
  if (form != DW_FORM_line_strp && form != DW_FORM_strp) return false;
  uint64_t off = 0;
  if (!fixed(p, end, offsetSize, off)) return false;
  std::span<const uint8_t> sec = form == DW_FORM_line_strp ? s.lineStr : s.str;
  // libdw checks the offset only; a string running off its section is not one to agree on.
  if (off >= sec.size() || !std::memchr(sec.data() + off, 0, sec.size() - off)) return false;
  out = reinterpret_cast<const char*>(sec.data() + off);
  return true;
}

// Skips a field of `form` (one that libdw's __libdw_form_val_len sizes the same way).
bool skipField(unsigned form, const uint8_t*& p, const uint8_t* end, unsigned offsetSize) {
  uint64_t v = 0;
  switch (form) {
    case DW_FORM_string: {
      const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
      if (!nul) return false;
      p = static_cast<const uint8_t*>(nul) + 1;
      return true;
    }
    case DW_FORM_strp:
    case DW_FORM_line_strp:
      v = offsetSize;
      break;
    case DW_FORM_data1:
      v = 1;
      break;
    case DW_FORM_data2:
      v = 2;
      break;
    case DW_FORM_data4:
      v = 4;
      break;
    case DW_FORM_data8:
      v = 8;
      break;
    case DW_FORM_data16:
      v = 16;
      break;
    case DW_FORM_udata:
      return boundedUleb(p, end, v);
    case DW_FORM_block:
      if (!boundedUleb(p, end, v)) return false;
      break;
    default:
      return false;
  }
  if (v > static_cast<uint64_t>(end - p)) return false;
  p += v;
  return true;
}

// A DW_LNCT_directory_index field, as dwarf_formudata reads it.
bool formIndex(unsigned form, const uint8_t*& p, const uint8_t* end, uint64_t& out) {
  switch (form) {
    case DW_FORM_data1:
      return fixed(p, end, 1, out);
    case DW_FORM_data2:
      return fixed(p, end, 2, out);
    case DW_FORM_data4:
      return fixed(p, end, 4, out);
    case DW_FORM_data8:
      return fixed(p, end, 8, out);
    case DW_FORM_udata:
      return boundedUleb(p, end, out);
    default:
      return false;
  }
}

// A DWARF 5 entry format: which field is the path and which the directory index (the last of
// each, as libdw takes them); -1 when absent.
struct EntryFormat {
  uint16_t forms[256];
  unsigned count = 0;
  int path = -1, index = -1;

  bool read(const uint8_t*& p, const uint8_t* end) {
    if (p >= end) return false;
    count = *p++;
    for (unsigned i = 0; i < count; ++i) {
      uint64_t desc = 0, form = 0;
      if (!boundedUleb(p, end, desc) || !boundedUleb(p, end, form) || desc > 0xffff ||
          form > 0xffff)
        return false;
      forms[i] = static_cast<uint16_t>(form);
      if (desc == DW_LNCT_path)
        path = static_cast<int>(i);
      else if (desc == DW_LNCT_directory_index)
        index = static_cast<int>(i);
    }
    return true;
  }
};

std::span<const uint8_t> bytes(Elf_Data* d) {
  if (!d || !d->d_buf) return {};
  return {static_cast<const uint8_t*>(d->d_buf), d->d_size};
}

}  // namespace

LineSections LineSections::of(Dwarf* dbg) {
  static_assert(std::endian::native == std::endian::little, "LineTable reads little-endian DWARF");
  LineSections s;
  Elf* elf = dbg ? dwarf_getelf(dbg) : nullptr;
  const char* ident = elf ? elf_getident(elf, nullptr) : nullptr;
  GElf_Ehdr eh;
  size_t names = 0;
  // A relocatable file's sections need relocating, which libdw does and this doesn't.
  if (!ident || ident[EI_DATA] != ELFDATA2LSB || !gelf_getehdr(elf, &eh) || eh.e_type == ET_REL ||
      elf_getshdrstrndx(elf, &names) != 0)
    return s;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, names, sh.sh_name);
    if (!name) continue;
    std::span<const uint8_t>* slot = std::strcmp(name, ".debug_line") == 0       ? &s.line
                                     : std::strcmp(name, ".debug_line_str") == 0 ? &s.lineStr
                                     : std::strcmp(name, ".debug_str") == 0      ? &s.str
                                                                                 : nullptr;
    // libdw inflated a compressed section in place when it opened the file; one still
    // compressed is not what libdw reads.
    if (!slot || (sh.sh_flags & SHF_COMPRESSED)) continue;
    *slot = bytes(elf_getdata(scn, nullptr));
  }
  s.usable = !s.line.empty();
  return s;
}

bool LineTable::read(Dwarf_Die* cudie, const LineSections& sections) {
  rows_.clear();
  files_.clear();
  sequenceStarts_.clear();
  if (!sections.usable) return false;
  sections_ = sections;
  Dwarf_Half version = 0;
  uint8_t unitType = 0, addrSize = 0, offsetSize = 0;
  if (dwarf_cu_info(cudie->cu, &version, &unitType, nullptr, nullptr, nullptr, &addrSize,
                    &offsetSize) != 0)
    return false;
  // Split units take their lines from the skeleton; libdw finds it.
  if (unitType != DW_UT_compile && unitType != DW_UT_partial) return false;
  if (addrSize != 4 && addrSize != 8) return false;
  addressSize_ = addrSize;

  // DW_AT_stmt_list as libdw's dwarf_getsrclines takes it (__libdw_formptr).
  Dwarf_Attribute attr;
  if (!dwarf_attr(cudie, DW_AT_stmt_list, &attr)) return false;
  unsigned form = dwarf_whatform(&attr);
  if (form != DW_FORM_sec_offset &&
      !(version <= 3 && (form == DW_FORM_data4 || form == DW_FORM_data8)))
    return false;
  Dwarf_Word offset = 0;
  if (dwarf_formudata(&attr, &offset) != 0 || offset >= sections.line.size()) return false;
  compDir_ = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));

  const uint8_t* p = sections.line.data() + offset;
  const uint8_t* sectionEnd = sections.line.data() + sections.line.size();
  const uint8_t* end = sectionEnd;
  if (!readHeader(p, end, sectionEnd) || !readProgram(p, end)) {
    rows_.clear();
    files_.clear();
    return false;
  }
  sortRows();
  return true;
}

bool LineTable::readHeader(const uint8_t*& p, const uint8_t*& end, const uint8_t* sectionEnd) {
  uint64_t length = 0;
  if (!fixed(p, sectionEnd, 4, length)) return false;
  offsetSize_ = 4;
  if (length == 0xffffffff) {
    if (!fixed(p, sectionEnd, 8, length)) return false;
    offsetSize_ = 8;
  }
  if (length > static_cast<uint64_t>(sectionEnd - p)) return false;
  end = p + length;
  uint64_t v = 0;
  if (!fixed(p, end, 2, v) || v < 2 || v > 5) return false;
  version_ = static_cast<unsigned>(v);
  if (version_ >= 5) {
    uint64_t addr = 0, segment = 0;
    if (!fixed(p, end, 1, addr) || !fixed(p, end, 1, segment) || addr != addressSize_ ||
        segment != 0)
      return false;
  }
  uint64_t headerLength = 0;
  if (!fixed(p, end, offsetSize_, headerLength)) return false;
  // The header must end where it says (libdw: DWARF_E_INVALID_DWARF otherwise; an NVIDIA CUBIN
  // has 4 bytes more that libdw reads).
  if (headerLength > static_cast<uint64_t>(end - p)) return false;
  const uint8_t* headerEnd = p + headerLength;

  if (!fixed(p, end, 1, v)) return false;
  minInstrLength_ = static_cast<uint8_t>(v);
  maxOpsPerInstr_ = 1;
  if (version_ >= 4) {
    if (!fixed(p, end, 1, v) || v == 0) return false;
    maxOpsPerInstr_ = static_cast<uint8_t>(v);
  }
  if (end - p < 4) return false;
  // is_stmt beyond 0/1 overflows libdw's 1-bit field at the first row.
  if (p[0] > 1) return false;
  lineBase_ = static_cast<int8_t>(p[1]);
  lineRange_ = p[2];
  opcodeBase_ = p[3];
  p += 4;
  if (lineRange_ == 0 || opcodeBase_ < 10 || end - p < opcodeBase_ - 1) return false;
  standardLengths_ = p - 1;
  for (unsigned op = 1; op < opcodeBase_ && op <= DW_LNS_set_isa; ++op)
    if (standardLengths_[op] != kStandardLengths[op]) return false;
  p += opcodeBase_ - 1;

  // Directories: index 0 is the unit's directory before DWARF 5, the table's first from 5 on.
  std::vector<const char*> dirs;
  if (version_ < 5) {
    dirs.push_back(compDir_);
    while (p < end && *p != 0) {
      const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
      if (!nul) return false;
      dirs.push_back(reinterpret_cast<const char*>(p));
      p = static_cast<const uint8_t*>(nul) + 1;
    }
    if (p >= end) return false;
    ++p;
  } else {
    EntryFormat format;
    if (!format.read(p, end)) return false;
    if (format.count > 0 && format.path < 0) return false;
    uint64_t n = 0;
    if (!boundedUleb(p, end, n)) return false;
    if (format.count == 0 && n != 0) return false;
    if (format.count != 0 && n > static_cast<uint64_t>(end - p) / format.count) return false;
    dirs.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      const char* dir = nullptr;
      for (unsigned f = 0; f < format.count; ++f) {
        bool ok = static_cast<int>(f) == format.path
                      ? formString(format.forms[f], p, end, offsetSize_, sections_, dir)
                      : skipField(format.forms[f], p, end, offsetSize_);
        if (!ok) return false;
      }
      if (!dir) return false;
      dirs.push_back(dir);
    }
  }

  // Files: before DWARF 5 numbered from 1 (0 is libdw's "???"); from 5 on entry 0 is file 0.
  auto addFile = [&](const char* name, uint64_t dir) {
    if (dir >= dirs.size()) return false;
    File f;
    f.name = name;
    if (name[0] != '/') f.dir = dirs[dir];  // nullptr: no DW_AT_comp_dir, the name alone
    files_.push_back(f);
    return true;
  };
  files_.push_back(File{nullptr, "???", false, {}});
  if (version_ < 5) {
    if (p >= end) return false;
    while (p < end && *p != 0) {
      const void* nul = std::memchr(p, 0, static_cast<size_t>(end - p));
      if (!nul) return false;
      const char* name = reinterpret_cast<const char*>(p);
      p = static_cast<const uint8_t*>(nul) + 1;
      uint64_t dir = 0, mtime = 0, size = 0;
      if (!boundedUleb(p, end, dir) || !boundedUleb(p, end, mtime) ||
          !boundedUleb(p, end, size) || !addFile(name, dir))
        return false;
    }
    if (p >= end) return false;
    ++p;
  } else {
    EntryFormat format;
    if (!format.read(p, end)) return false;
    if (format.count > 0 && (format.path < 0 || format.index < 0)) return false;
    uint64_t n = 0;
    if (!boundedUleb(p, end, n)) return false;
    if (format.count == 0 && n != 0) return false;
    if (format.count != 0 && n > static_cast<uint64_t>(end - p) / format.count) return false;
    files_.reserve(n + 1);
    for (uint64_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      uint64_t dir = UINT64_MAX;
      for (unsigned f = 0; f < format.count; ++f) {
        bool ok = static_cast<int>(f) == format.path
                      ? formString(format.forms[f], p, end, offsetSize_, sections_, name)
                  : static_cast<int>(f) == format.index
                      ? formIndex(format.forms[f], p, end, dir)
                      : skipField(format.forms[f], p, end, offsetSize_);
        if (!ok) return false;
      }
      if (!name || dir == UINT64_MAX) return false;
      if (i == 0) files_.pop_back();  // entry 0 takes the place of "???"
      if (!addFile(name, dir)) return false;
    }
  }
  return p == headerEnd;
}

bool LineTable::readProgram(const uint8_t* p, const uint8_t* end) {
  // The state machine's registers, in libdw's types.
  uint64_t address = 0;
  uint32_t opIndex = 0, file = 1, column = 0, isa = 0, discriminator = 0;
  int64_t line = 1;
  // is_stmt, basic_block, prologue_end, epilogue_begin: no answer depends on them (is_stmt
  // stays 0 or 1 from a default of 0 or 1, which the header was checked for).
  auto advance = [&](uint32_t operationAdvance) {
    // libdw computes the step in unsigned int (32 bits), as written here.
    const uint32_t ops = opIndex + operationAdvance;
    address += static_cast<uint32_t>(minInstrLength_ * (ops / maxOpsPerInstr_));
    opIndex = ops % maxOpsPerInstr_;
  };
  // Appends a row; false where libdw's narrower fields reject the table.
  auto row = [&](bool endSequence) {
    if (line < INT_MIN || line > INT_MAX || column > 0xffff || discriminator > 0xffffff ||
        isa > 0xff || opIndex > 0xff || file > 0x7fffffff)
      return false;
    if (rows_.empty() || rows_.back().endSequence)
      sequenceStarts_.push_back(static_cast<uint32_t>(rows_.size()));
    rows_.push_back({address, static_cast<int32_t>(line), file, endSequence ? 1u : 0u});
    return true;
  };

  // GCC's programs take 3 to 5 bytes a row: room reserved (not touched) for them all.
  rows_.reserve(static_cast<size_t>(end - p) / 3);
  while (p < end) {
    const unsigned opcode = *p++;
    if (opcode >= opcodeBase_) {
      const unsigned adjusted = opcode - opcodeBase_;
      line += lineBase_ + static_cast<int>(adjusted % lineRange_);
      advance(adjusted / lineRange_);
      if (!row(false)) return false;
      discriminator = 0;
    } else if (opcode == 0) {
      if (end - p < 2) return false;
      const unsigned length = *p++;
      // libdw reads the length as one byte, not as LEB128, and with 0 steps back a byte.
      if (length == 0 || length >= 0x80 || static_cast<unsigned>(end - p) < length) return false;
      const uint8_t* next = p + length;
      const unsigned sub = *p++;
      switch (sub) {
        case DW_LNE_end_sequence:
          if (length != 1 || !row(true)) return false;
          address = 0;
          opIndex = 0;
          file = 1;
          line = 1;
          column = 0;
          isa = 0;
          discriminator = 0;
          break;
        case DW_LNE_set_address: {
          uint64_t a = 0;
          if (length != addressSize_ + 1 || !fixed(p, end, addressSize_, a)) return false;
          address = a;
          opIndex = 0;
          break;
        }
        case DW_LNE_set_discriminator:
          if (!uleb32(p, end, discriminator) || p != next) return false;
          break;
        case DW_LNE_define_file:
        case DW_LNE_NVIDIA_inlined_call:
        case DW_LNE_NVIDIA_set_function_name:
          return false;
        default:
          p = next;  // ignored, as libdw does
          break;
      }
    } else if (opcode <= DW_LNS_set_isa) {
      uint32_t u = 0;
      switch (opcode) {
        case DW_LNS_copy:
          if (!row(false)) return false;
          discriminator = 0;
          break;
        case DW_LNS_advance_pc:
          if (!uleb32(p, end, u)) return false;
          advance(u);
          break;
        case DW_LNS_advance_line: {
          // libdw adds it as an int.
          int64_t s = 0;
          const uint8_t* start = p;
          if (!sleb(p, end, s) || p - start > kMaxLeb || s < INT_MIN || s > INT_MAX) return false;
          line += s;
          break;
        }
        case DW_LNS_set_file:
          if (!uleb32(p, end, file)) return false;
          break;
        case DW_LNS_set_column:
          if (!uleb32(p, end, column)) return false;
          break;
        case DW_LNS_const_add_pc:
          advance((255u - opcodeBase_) / lineRange_);
          break;
        case DW_LNS_fixed_advance_pc: {
          uint64_t a = 0;
          if (!fixed(p, end, 2, a)) return false;
          address += a;
          opIndex = 0;
          break;
        }
        case DW_LNS_set_isa:
          if (!uleb32(p, end, isa)) return false;
          break;
        default:  // negate_stmt, basic_block, prologue_end, epilogue_begin
          break;
      }
    } else {
      // A standard opcode newer than this reader: its operands skipped, as libdw does.
      for (unsigned n = standardLengths_[opcode]; n > 0; --n) {
        uint64_t skipped = 0;
        if (!boundedUleb(p, end, skipped)) return false;
      }
    }
  }
  return true;
}

void LineTable::sortRows() {
  // libdw's order: by address, an end_sequence first at one address, then as written.
  auto before = [](const Row& a, const Row& b) {
    return a.address != b.address ? a.address < b.address : a.endSequence > b.endSequence;
  };
  order_ = Order::kWritten;
  bool sorted = true;
  for (size_t i = 1; i < rows_.size() && sorted; ++i) sorted = !before(rows_[i], rows_[i - 1]);
  if (sorted) return finishRows();

  // A unit has a sequence per function section (GCC) in no particular order. Each sequence is
  // put in order on its own first: it is in order already but where its end_sequence row has
  // the address of the rows before it (a function ending in a call that doesn't return), which
  // libdw's sort moves before them. Then the sequences by their first row; sequences whose
  // rows interleave (those of discarded COMDAT sections all start at 0) form a cluster, sorted
  // row by row. Clusters don't share a key, so their order is the sort's.
  const size_t n = sequenceStarts_.size();
  auto seqBegin = [&](size_t s) { return rows_.begin() + sequenceStarts_[s]; };
  auto seqEnd = [&](size_t s) {
    return s + 1 < n ? rows_.begin() + sequenceStarts_[s + 1] : rows_.end();
  };
  for (size_t s = 0; s < n; ++s) {
    // Insertion: the rows out of place are a few at the end.
    for (auto i = seqBegin(s) + 1; i < seqEnd(s); ++i)
      for (auto j = i; j > seqBegin(s) && before(*j, *(j - 1)); --j) std::iter_swap(j, j - 1);
  }
  std::vector<uint32_t> order(n);
  for (size_t s = 0; s < n; ++s) order[s] = static_cast<uint32_t>(s);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return before(*seqBegin(a), *seqBegin(b)) || (!before(*seqBegin(b), *seqBegin(a)) && a < b);
  });
  std::vector<Row> out;
  out.reserve(rows_.size());
  std::vector<uint32_t> cluster;
  for (size_t k = 0; k < n;) {
    // The cluster: the sequences that start at or below the highest row of those before.
    cluster.assign(1, order[k]);
    Row last = *(seqEnd(order[k]) - 1);
    for (++k; k < n && !before(last, *seqBegin(order[k])); ++k) {
      cluster.push_back(order[k]);
      if (before(last, *(seqEnd(order[k]) - 1))) last = *(seqEnd(order[k]) - 1);
    }
    const size_t at = out.size();
    if (cluster.size() > 1) std::sort(cluster.begin(), cluster.end());  // as written
    for (uint32_t s : cluster) out.insert(out.end(), seqBegin(s), seqEnd(s));
    if (cluster.size() > 1) {
      std::stable_sort(out.begin() + static_cast<ptrdiff_t>(at), out.end(), before);
      order_ = Order::kSorted;
    } else if (order_ == Order::kWritten) {
      order_ = Order::kSequences;
    }
  }
  rows_ = std::move(out);
  finishRows();
}

void LineTable::finishRows() {
  if (!rows_.empty()) rows_.back().endSequence = 1;
  sequenceStarts_ = {};
}

const LineTable::Row* LineTable::find(uint64_t address) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), address,
                             [](uint64_t a, const Row& r) { return a < r.address; });
  if (it == rows_.begin()) return nullptr;
  --it;
  return it->endSequence ? nullptr : &*it;
}

const std::string* LineTable::fileName(uint64_t file) {
  if (file >= files_.size()) return nullptr;
  File& f = files_[file];
  if (!f.joined) {
    f.joined = true;
    if (f.dir) {
      f.path = f.dir;
      f.path += '/';
    }
    f.path += f.name;
  }
  return &f.path;
}

}  // namespace heapman::replay::detail
