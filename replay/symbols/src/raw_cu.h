// RawCu: one compile unit's DIEs read straight from the bytes libdw has loaded, with the unit's
// abbreviations decoded once. Walking a C++ unit through libdw (dwarf_child, dwarf_siblingof,
// dwarf_tag, dwarf_ranges) looks each DIE's abbreviation up again in a hash table behind a
// read-write lock: a third of the time spent finding a unit's functions was that lock.
//
// It knows the forms of DWARF 2 to 5 and GNU's extensions; anything else (an unknown form or
// abbreviation code, an address size other than 4 or 8, a sibling pointing backwards, bytes past
// the unit's end) makes init() or read() fail, and the caller walks the unit through libdw
// instead, which then says what it makes of it.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <vector>

namespace heapman::replay::detail {

class RawCu {
 public:
  // One DIE as read: where it is, what it is, and the attributes the function tree needs.
  struct Die {
    const uint8_t* at = nullptr;    // the DIE's first byte (its abbreviation code)
    const uint8_t* next = nullptr;  // its first child, or its next sibling when it has none
    const uint8_t* sibling = nullptr;  // DW_AT_sibling's target; nullptr without one
    unsigned tag = 0;
    bool children = false;
    // Own DW_AT_low_pc (DW_FORM_addr) and DW_AT_high_pc (an address or a constant offset): the
    // range libdw's dwarf_ranges would give. Otherwise `ranges` says whether dwarf_ranges may find
    // any (a DW_AT_ranges, an attribute it follows, or a low/high pair of other forms).
    bool lowHigh = false;
    uint64_t lo = 0, hi = 0;
    bool ranges = false;
    // DW_AT_call_file / DW_AT_call_line: 1 read here, 2 present in a form libdw must read.
    int callFileState = 0, callLineState = 0;
    uint64_t callFile = 0, callLine = 0;
  };

  // Precondition: `cudie` is a unit DIE from libdw. False when the unit can't be read here.
  bool init(Dwarf_Die* cudie);
  // The unit DIE's first child; nullptr when it has none.
  const uint8_t* firstChild() const { return first_; }
  // The first child of `die`, as dwarf_child finds it; nullptr when it has none.
  const uint8_t* firstChild(const Die& die) const {
    return die.children && die.next < end_ && *die.next != 0 ? die.next : nullptr;
  }
  // Reads the DIE at `at`. False on malformed or unknown input, or at the end of a sibling list
  // (`end` true then: a null entry or the unit's end).
  bool read(const uint8_t* at, Die& die, bool& end) const;
  // Where the DIE after `die` and all of its children would start, as dwarf_siblingof finds it
  // (by DW_AT_sibling where there is one); listEnd() of it when `die` was the last of its list.
  // False on malformed input.
  bool skip(const Die& die, const uint8_t*& next) const;
  // True when `p` ends a sibling list: a null entry or the unit's end.
  bool listEnd(const uint8_t* p) const { return p >= end_ || *p == 0; }
  // What follows the null entry at `p` (precondition: listEnd(p)); the unit's end stays put.
  const uint8_t* afterListEnd(const uint8_t* p) const { return p >= end_ ? end_ : p + 1; }
  // Reads each DIE of the list starting at `first` (nullptr: an empty list) and calls
  // visit(die, childrenEnd), which returns false to give up and may walk the DIE's children,
  // setting childrenEnd to what walkList gave it as `after`: then a DIE without DW_AT_sibling (the
  // last of a list, often a namespace) is not read through again to find the next. `after`: what
  // follows the list's null entry. False on malformed input or when visit gave up.
  template <typename Visit>
  bool walkList(const uint8_t* first, const uint8_t*& after, Visit&& visit) const {
    after = nullptr;
    if (!first) return true;
    const uint8_t* at = first;
    for (;;) {
      Die d;
      bool end = false;
      if (!read(at, d, end)) return false;
      const uint8_t* childrenEnd = nullptr;
      if (!visit(d, childrenEnd)) return false;
      if (d.sibling || !childrenEnd) {
        if (!skip(d, at)) return false;
      } else {
        at = childrenEnd;
      }
      if (listEnd(at)) {
        after = afterListEnd(at);
        return true;
      }
    }
  }

  // A Dwarf_Die for libdw (its abbreviation looked up on first use).
  Dwarf_Die dwarfDie(const uint8_t* at) const;

 private:
  struct Attr {
    uint16_t name, form;
    int32_t offset;  // in keys_: where its value is, from the end of the abbreviation code
    int64_t implicitConst;
  };
  struct Abbrev {
    bool valid = false;
    bool children = false;
    unsigned tag = 0;
    uint32_t attrBegin = 0, attrEnd = 0;
    // The bytes of a DIE with this abbreviation when none of its attributes is read here and
    // all have forms of one size (most of the members, parameters and variables a walk passes
    // over); -1 otherwise.
    int32_t plainSize = -1;
    // The bytes of a DIE with this abbreviation when all of its forms have one size, the
    // attributes read here then at keys_[keyBegin, keyEnd); -1 otherwise.
    int32_t layoutSize = -1;
    uint32_t keyBegin = 0, keyEnd = 0;
  };
  // What read() has seen of a DIE's attributes so far (the first of a name counts, as in libdw).
  struct KeyState {
    bool low = false, high = false, highIsAddr = false, other = false, seenSibling = false;
    bool seenLow = false, seenHigh = false, seenFile = false, seenLine = false;
    uint64_t highValue = 0;
  };

  // Reads attribute `a` (one isKey() names) in `form` with its value at `p`, of the DIE at `at`.
  bool readKey(const Attr& a, unsigned form, const uint8_t* p, const uint8_t* at, Die& die,
               KeyState& st) const;
  // Skips one attribute value of `form` at `p`; false when the form is unknown or runs past
  // the end.
  bool skipForm(unsigned form, const uint8_t*& p) const;
  // The size of a value of `form` when it has one size; -1 otherwise.
  int fixedSize(unsigned form) const;

  Dwarf_CU* cu_ = nullptr;
  const uint8_t* unit_ = nullptr;  // the unit header's first byte (references are relative to it)
  const uint8_t* end_ = nullptr;   // one past the unit
  const uint8_t* first_ = nullptr;
  unsigned version_ = 0;
  unsigned addrSize_ = 0, offsetSize_ = 0;
  std::vector<Abbrev> abbrevs_;  // by code
  std::vector<Attr> attrs_;
  std::vector<Attr> keys_;  // by abbreviation with a layout: the attributes read() looks at
};

}  // namespace heapman::replay::detail
