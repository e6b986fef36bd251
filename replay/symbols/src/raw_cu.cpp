#include "raw_cu.h"

#include <dwarf.h>
#include <gelf.h>

#include <bit>
#include <cstring>

#include "dwarf_bytes.h"

namespace heapman::replay::detail {

namespace {

// Codes beyond this are not a table GCC or clang write (they number from 1 up): libdw reads it.
constexpr uint64_t kMaxAbbrevCode = 1 << 16;

// The attributes read() looks at.
bool isKey(unsigned name) {
  switch (name) {
    case DW_AT_sibling:
    case DW_AT_low_pc:
    case DW_AT_high_pc:
    case DW_AT_ranges:
    case DW_AT_abstract_origin:
    case DW_AT_specification:
    case DW_AT_call_file:
    case DW_AT_call_line:
      return true;
    default:
      return false;
  }
}

bool isConstant(unsigned form) {
  return form == DW_FORM_data1 || form == DW_FORM_data2 || form == DW_FORM_data4 ||
         form == DW_FORM_data8 || form == DW_FORM_udata;
}

}  // namespace

bool RawCu::init(Dwarf_Die* cudie) {
  static_assert(std::endian::native == std::endian::little, "RawCu reads little-endian DWARF");
  cu_ = cudie->cu;
  Dwarf_Half version = 0;
  uint8_t unitType = 0, addrSize = 0, offsetSize = 0;
  if (dwarf_cu_info(cu_, &version, &unitType, nullptr, nullptr, nullptr, &addrSize, &offsetSize) !=
      0)
    return false;
  if (version < 2 || version > 5 || (addrSize != 4 && addrSize != 8) ||
      (offsetSize != 4 && offsetSize != 8))
    return false;
  version_ = version;
  addrSize_ = addrSize;
  offsetSize_ = offsetSize;
  Dwarf* dbg = dwarf_cu_getdwarf(cu_);
  Elf* elf = dbg ? dwarf_getelf(dbg) : nullptr;
  const char* ident = elf ? elf_getident(elf, nullptr) : nullptr;
  if (!ident || ident[EI_DATA] != ELFDATA2LSB) return false;

  // The unit's bytes: libdw's copy of .debug_info (decompressed when the file compresses it).
  Dwarf_Off dieOffset = dwarf_dieoffset(cudie);
  Dwarf_Off inUnit = dwarf_cuoffset(cudie);
  if (dieOffset == static_cast<Dwarf_Off>(-1) || inUnit == static_cast<Dwarf_Off>(-1) ||
      inUnit > dieOffset)
    return false;
  Dwarf_Off next = 0;
  if (dwarf_next_unit(dbg, dieOffset - inUnit, &next, nullptr, nullptr, nullptr, nullptr, nullptr,
                      nullptr, nullptr) != 0 ||
      next <= dieOffset)
    return false;
  const auto* section = static_cast<const uint8_t*>(cudie->addr) - dieOffset;
  unit_ = section + (dieOffset - inUnit);
  end_ = section + next;

  // The abbreviations, as libdw parses them; the first of a code wins, as in libdw's table.
  Dwarf_Off off = 0;
  for (;;) {
    size_t length = 0;
    Dwarf_Abbrev* a = dwarf_getabbrev(cudie, off, &length);
    if (!a || a == reinterpret_cast<Dwarf_Abbrev*>(-1l) || length == 0) break;
    off += length;
    unsigned code = dwarf_getabbrevcode(a);
    if (code == 0 || code >= kMaxAbbrevCode) return false;
    if (abbrevs_.size() <= code) abbrevs_.resize(code + 1);
    Abbrev& ab = abbrevs_[code];
    if (ab.valid) continue;
    ab.valid = true;
    ab.tag = dwarf_getabbrevtag(a);
    ab.children = dwarf_abbrevhaschildren(a) != 0;
    ab.attrBegin = static_cast<uint32_t>(attrs_.size());
    // Until the terminating pair: libdw 0.188's dwarf_getattrcnt counts more attributes than
    // libc6-dbg's abbreviations have (its later indices fail).
    for (size_t i = 0;; ++i) {
      unsigned name = 0, form = 0;
      Dwarf_Sword data = 0;
      if (dwarf_getabbrevattr_data(a, i, &name, &form, &data, nullptr) != 0) break;
      if (name > 0xffff || form > 0xffff) return false;
      attrs_.push_back({static_cast<uint16_t>(name), static_cast<uint16_t>(form), 0, data});
    }
    ab.attrEnd = static_cast<uint32_t>(attrs_.size());
    int32_t size = 0;
    for (uint32_t i = ab.attrBegin; i < ab.attrEnd && size >= 0; ++i) {
      const Attr& at = attrs_[i];
      if (isKey(at.name)) {
        size = -1;
      } else {
        int n = fixedSize(at.form);
        size = n < 0 ? -1 : size + n;
      }
    }
    ab.plainSize = size;
    // The same when every form has one size, with the attributes read here at fixed offsets:
    // read() then goes to them directly instead of through every attribute's form.
    int32_t layout = 0;
    ab.keyBegin = static_cast<uint32_t>(keys_.size());
    for (uint32_t i = ab.attrBegin; i < ab.attrEnd && layout >= 0; ++i) {
      Attr at = attrs_[i];
      int n = fixedSize(at.form);
      if (n < 0) {
        layout = -1;
        break;
      }
      if (isKey(at.name)) {
        at.offset = layout;
        keys_.push_back(at);
      }
      layout += n;
    }
    if (layout < 0) keys_.resize(ab.keyBegin);
    ab.keyEnd = static_cast<uint32_t>(keys_.size());
    ab.layoutSize = layout;
  }

  Die unit;
  bool end = false;
  if (!read(static_cast<const uint8_t*>(cudie->addr), unit, end)) return false;
  first_ = firstChild(unit);
  return true;
}

int RawCu::fixedSize(unsigned form) const {
  switch (form) {
    case DW_FORM_flag_present:
    case DW_FORM_implicit_const:
      return 0;
    case DW_FORM_data1:
    case DW_FORM_ref1:
    case DW_FORM_flag:
    case DW_FORM_strx1:
    case DW_FORM_addrx1:
      return 1;
    case DW_FORM_data2:
    case DW_FORM_ref2:
    case DW_FORM_strx2:
    case DW_FORM_addrx2:
      return 2;
    case DW_FORM_strx3:
    case DW_FORM_addrx3:
      return 3;
    case DW_FORM_data4:
    case DW_FORM_ref4:
    case DW_FORM_strx4:
    case DW_FORM_addrx4:
    case DW_FORM_ref_sup4:
      return 4;
    case DW_FORM_data8:
    case DW_FORM_ref8:
    case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
      return 8;
    case DW_FORM_data16:
      return 16;
    case DW_FORM_addr:
      return static_cast<int>(addrSize_);
    case DW_FORM_ref_addr:
      return static_cast<int>(version_ == 2 ? addrSize_ : offsetSize_);
    case DW_FORM_strp:
    case DW_FORM_line_strp:
    case DW_FORM_sec_offset:
    case DW_FORM_strp_sup:
    case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
      return static_cast<int>(offsetSize_);
    default:
      return -1;
  }
}

bool RawCu::skipForm(unsigned form, const uint8_t*& p) const {
  if (int n = fixedSize(form); n >= 0) {
    if (end_ - p < n) return false;
    p += n;
    return true;
  }
  uint64_t v = 0;
  switch (form) {
    case DW_FORM_sdata:
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
      return uleb(p, end_, v);
    case DW_FORM_string: {
      const void* nul = std::memchr(p, 0, static_cast<size_t>(end_ - p));
      if (!nul) return false;
      p = static_cast<const uint8_t*>(nul) + 1;
      return true;
    }
    case DW_FORM_block1:
      if (!fixed(p, end_, 1, v)) return false;
      break;
    case DW_FORM_block2:
      if (!fixed(p, end_, 2, v)) return false;
      break;
    case DW_FORM_block4:
      if (!fixed(p, end_, 4, v)) return false;
      break;
    case DW_FORM_block:
    case DW_FORM_exprloc:
      if (!uleb(p, end_, v)) return false;
      break;
    default:
      return false;
  }
  // A block of v bytes.
  if (v > static_cast<uint64_t>(end_ - p)) return false;
  p += v;
  return true;
}

bool RawCu::read(const uint8_t* at, Die& die, bool& end) const {
  end = false;
  if (at >= end_) {
    end = true;
    return false;
  }
  const uint8_t* p = at;
  uint64_t code = 0;
  if (!uleb(p, end_, code)) return false;
  if (code == 0) {
    end = true;
    return false;
  }
  if (code >= abbrevs_.size() || !abbrevs_[code].valid) return false;
  const Abbrev& ab = abbrevs_[code];
  die = Die{};
  die.at = at;
  die.tag = ab.tag;
  die.children = ab.children;
  if (ab.plainSize >= 0) {
    if (end_ - p < ab.plainSize) return false;
    die.next = p + ab.plainSize;
    return true;
  }
  KeyState st;
  if (ab.layoutSize >= 0) {
    if (end_ - p < ab.layoutSize) return false;
    for (uint32_t i = ab.keyBegin; i < ab.keyEnd; ++i)
      if (!readKey(keys_[i], keys_[i].form, p + keys_[i].offset, at, die, st)) return false;
    p += ab.layoutSize;
  } else {
    for (uint32_t i = ab.attrBegin; i < ab.attrEnd; ++i) {
      const Attr& a = attrs_[i];
      unsigned form = a.form;
      while (form == DW_FORM_indirect) {
        uint64_t f = 0;
        if (!uleb(p, end_, f) || f > 0xffff) return false;
        form = static_cast<unsigned>(f);
      }
      if (isKey(a.name) && !readKey(a, form, p, at, die, st)) return false;
      if (!skipForm(form, p)) return false;
    }
  }
  die.next = p;
  die.lowHigh = st.low && st.high;
  if (die.lowHigh) die.hi = st.highIsAddr ? st.highValue : die.lo + st.highValue;
  die.ranges = !die.lowHigh && (st.other || st.low || st.high);
  return true;
}

bool RawCu::readKey(const Attr& a, unsigned form, const uint8_t* p, const uint8_t* at, Die& die,
                    KeyState& st) const {
  switch (a.name) {
    case DW_AT_sibling: {
      if (st.seenSibling) break;
      st.seenSibling = true;
      // As libdw's dwarf_siblingof: a unit-relative reference after this DIE, inside the unit;
      // anything else is an error there, which the libdw walk reproduces.
      const uint8_t* q = p;
      uint64_t v = 0;
      bool ok = form == DW_FORM_ref1   ? fixed(q, end_, 1, v)
                : form == DW_FORM_ref2 ? fixed(q, end_, 2, v)
                : form == DW_FORM_ref4 ? fixed(q, end_, 4, v)
                : form == DW_FORM_ref8 ? fixed(q, end_, 8, v)
                : form == DW_FORM_ref_udata && uleb(q, end_, v);
      if (!ok || v >= static_cast<uint64_t>(end_ - unit_) ||
          v <= static_cast<uint64_t>(at - unit_))
        return false;
      die.sibling = unit_ + v;
      break;
    }
    case DW_AT_low_pc:
      if (st.seenLow) break;
      st.seenLow = true;
      if (form == DW_FORM_addr) {
        const uint8_t* q = p;
        if (!fixed(q, end_, addrSize_, die.lo)) return false;
        st.low = true;
      } else {
        st.other = true;
      }
      break;
    case DW_AT_high_pc:
      if (st.seenHigh) break;
      st.seenHigh = true;
      if (form == DW_FORM_addr || isConstant(form)) {
        const uint8_t* q = p;
        bool ok = form == DW_FORM_addr    ? fixed(q, end_, addrSize_, st.highValue)
                  : form == DW_FORM_udata ? uleb(q, end_, st.highValue)
                  : fixed(q, end_,
                          form == DW_FORM_data1   ? 1
                          : form == DW_FORM_data2 ? 2
                          : form == DW_FORM_data4 ? 4
                                                  : 8,
                          st.highValue);
        if (!ok) return false;
        st.high = true;
        st.highIsAddr = form == DW_FORM_addr;
      } else {
        st.other = true;
      }
      break;
    case DW_AT_ranges:
    case DW_AT_abstract_origin:
    case DW_AT_specification:
      st.other = true;
      break;
    case DW_AT_call_file:
    case DW_AT_call_line: {
      bool& seen = a.name == DW_AT_call_file ? st.seenFile : st.seenLine;
      if (seen) break;
      seen = true;
      int& state = a.name == DW_AT_call_file ? die.callFileState : die.callLineState;
      uint64_t& value = a.name == DW_AT_call_file ? die.callFile : die.callLine;
      const uint8_t* q = p;
      int64_t s = 0;
      state = 1;
      if (form == DW_FORM_implicit_const) {
        value = static_cast<uint64_t>(a.implicitConst);
      } else if (form == DW_FORM_sdata) {
        if (!sleb(q, end_, s)) return false;
        value = static_cast<uint64_t>(s);
      } else if (form == DW_FORM_udata) {
        if (!uleb(q, end_, value)) return false;
      } else if (isConstant(form)) {
        if (!fixed(q, end_,
                   form == DW_FORM_data1   ? 1
                   : form == DW_FORM_data2 ? 2
                   : form == DW_FORM_data4 ? 4
                                           : 8,
                   value))
          return false;
      } else {
        state = 2;
      }
      break;
    }
    default:
      break;
  }
  return true;
}

bool RawCu::skip(const Die& die, const uint8_t*& next) const {
  // dwarf_siblingof's loop: jump by DW_AT_sibling where there is one, else go through the
  // children, a level deeper for each DIE with children, a level up for each null entry.
  Die cur = die;
  unsigned level = 0;
  for (;;) {
    const uint8_t* p;
    if (cur.sibling) {
      p = cur.sibling;
    } else {
      p = cur.next;
      if (cur.children) ++level;
    }
    while (p < end_ && *p == 0 && level > 0) {
      --level;
      ++p;
    }
    if (level == 0 || p >= end_) {
      next = p;
      return true;
    }
    bool atEnd = false;
    if (!read(p, cur, atEnd)) return false;
  }
}

Dwarf_Die RawCu::dwarfDie(const uint8_t* at) const {
  Dwarf_Die d{};
  d.addr = const_cast<uint8_t*>(at);
  d.cu = cu_;
  d.abbrev = nullptr;
  return d;
}

}  // namespace heapman::replay::detail
