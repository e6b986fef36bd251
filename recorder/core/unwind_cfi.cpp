// Unwind rules from call-frame information (unwind.h, parseFrameRule): the CIE's and FDE's
// instructions of .eh_frame, DWARF 4 section 6.4 and the LSB's .eh_frame_hdr. Reads the loaded
// module in place; no allocation, lock or system call. No recorder state: the unit tests link it
// alone.
#include <cstring>

#include "unwind.h"

namespace heapman::rec {

namespace {

FrameRule unknown() {
  FrameRule r;
  r.kind = FrameRule::kUnknown;
  return r;
}

uint32_t read32(uintptr_t at) {
  uint32_t v;
  std::memcpy(&v, reinterpret_cast<const void*>(at), 4);
  return v;
}

const uint8_t* uleb(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; p && p < end && shift < 64; shift += 7) {
    uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return p;
  }
  return nullptr;
}

const uint8_t* sleb(const uint8_t* p, const uint8_t* end, int64_t& v) {
  uint64_t u = 0;
  int shift = 0;
  for (; p && p < end && shift < 64;) {
    uint8_t b = *p++;
    u |= uint64_t{b & 0x7fu} << shift;
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) u |= ~uint64_t{0} << shift;
      v = static_cast<int64_t>(u);
      return p;
    }
  }
  return nullptr;
}

// Bytes of a DW_EH_PE_* encoded value, -1 when not a fixed size this reads.
int encodedSize(uint8_t enc) {
  switch (enc & 0x0f) {
    case 0x00: return sizeof(void*);
    case 0x02: case 0x0a: return 2;
    case 0x03: case 0x0b: return 4;
    case 0x04: case 0x0c: return 8;
    default: return -1;
  }
}

uint64_t readUnsigned(const uint8_t* p, int size) {
  uint64_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(size));  // little-endian
  return v;
}

constexpr uint64_t kRbp = 6, kRsp = 7, kRa = 16;

// The rules that matter at one location.
struct Row {
  uint64_t cfaReg = ~uint64_t{0};  // a register number; ~0 after a DWARF expression
  int64_t cfaOffset = 0;
  enum Rule : uint8_t { kSame, kAt, kUndefined, kOther };
  Rule rbp = kSame, ra = kSame;
  int64_t rbpAt = 0, raAt = 0;  // offsets from the CFA, for kAt
};

struct Program {
  uint64_t codeAlign = 1;
  int64_t dataAlign = 1;
  uintptr_t loc = 0;   // the location the current row starts at
  uintptr_t pc = 0;    // stop when a row starts past it
  Row row, initial;    // the current row, and the CIE's (DW_CFA_restore)
  Row saved[8];        // DW_CFA_remember_state
  uint32_t depth = 0;
};

void setRule(Row& row, uint64_t reg, Row::Rule rule, int64_t at) {
  if (reg == kRbp) {
    row.rbp = rule;
    row.rbpAt = at;
  } else if (reg == kRa) {
    row.ra = rule;
    row.raAt = at;
  }
}

void restoreRule(Program& s, uint64_t reg) {
  if (reg == kRbp) {
    s.row.rbp = s.initial.rbp;
    s.row.rbpAt = s.initial.rbpAt;
  } else if (reg == kRa) {
    s.row.ra = s.initial.ra;
    s.row.raAt = s.initial.raAt;
  }
}

// Runs call-frame instructions [p, end) until a row would start past s.pc. False on an
// instruction this does not read (the rule is then unknown).
bool execute(Program& s, const uint8_t* p, const uint8_t* end) {
  while (p && p < end) {
    uint8_t op = *p++;
    uint64_t a = 0, b = 0;
    int64_t sa = 0;
    uint64_t advance = 0;
    switch (op & 0xc0) {
      case 0x40:  // DW_CFA_advance_loc
        advance = op & 0x3f;
        break;
      case 0x80:  // DW_CFA_offset
        if (!(p = uleb(p, end, a))) return false;
        setRule(s.row, op & 0x3f, Row::kAt, static_cast<int64_t>(a) * s.dataAlign);
        continue;
      case 0xc0:  // DW_CFA_restore
        restoreRule(s, op & 0x3f);
        continue;
      default:
        break;
    }
    if ((op & 0xc0) == 0) {
      switch (op) {
        case 0x00:  // DW_CFA_nop
          continue;
        case 0x02:  // DW_CFA_advance_loc1
          if (end - p < 1) return false;
          advance = p[0];
          p += 1;
          break;
        case 0x03:  // DW_CFA_advance_loc2
          if (end - p < 2) return false;
          advance = readUnsigned(p, 2);
          p += 2;
          break;
        case 0x04:  // DW_CFA_advance_loc4
          if (end - p < 4) return false;
          advance = readUnsigned(p, 4);
          p += 4;
          break;
        case 0x05:  // DW_CFA_offset_extended
          if (!(p = uleb(p, end, a)) || !(p = uleb(p, end, b))) return false;
          setRule(s.row, a, Row::kAt, static_cast<int64_t>(b) * s.dataAlign);
          continue;
        case 0x06:  // DW_CFA_restore_extended
          if (!(p = uleb(p, end, a))) return false;
          restoreRule(s, a);
          continue;
        case 0x07:  // DW_CFA_undefined
          if (!(p = uleb(p, end, a))) return false;
          setRule(s.row, a, a == kRa ? Row::kUndefined : Row::kOther, 0);
          continue;
        case 0x08:  // DW_CFA_same_value
          if (!(p = uleb(p, end, a))) return false;
          setRule(s.row, a, Row::kSame, 0);
          continue;
        case 0x09:  // DW_CFA_register
          if (!(p = uleb(p, end, a)) || !(p = uleb(p, end, b))) return false;
          setRule(s.row, a, Row::kOther, 0);
          continue;
        case 0x0a:  // DW_CFA_remember_state
          if (s.depth == sizeof s.saved / sizeof s.saved[0]) return false;
          s.saved[s.depth++] = s.row;
          continue;
        case 0x0b:  // DW_CFA_restore_state
          if (s.depth == 0) return false;
          s.row = s.saved[--s.depth];
          continue;
        case 0x0c:  // DW_CFA_def_cfa
          if (!(p = uleb(p, end, a)) || !(p = uleb(p, end, b))) return false;
          s.row.cfaReg = a;
          s.row.cfaOffset = static_cast<int64_t>(b);
          continue;
        case 0x0d:  // DW_CFA_def_cfa_register
          if (!(p = uleb(p, end, a))) return false;
          s.row.cfaReg = a;
          continue;
        case 0x0e:  // DW_CFA_def_cfa_offset
          if (!(p = uleb(p, end, a))) return false;
          s.row.cfaOffset = static_cast<int64_t>(a);
          continue;
        case 0x0f:  // DW_CFA_def_cfa_expression
          if (!(p = uleb(p, end, a)) || a > static_cast<uint64_t>(end - p)) return false;
          p += a;
          s.row.cfaReg = ~uint64_t{0};
          continue;
        case 0x10:  // DW_CFA_expression
        case 0x16:  // DW_CFA_val_expression
          if (!(p = uleb(p, end, a)) || !(p = uleb(p, end, b)) ||
              b > static_cast<uint64_t>(end - p))
            return false;
          p += b;
          setRule(s.row, a, Row::kOther, 0);
          continue;
        case 0x11:  // DW_CFA_offset_extended_sf
          if (!(p = uleb(p, end, a)) || !(p = sleb(p, end, sa))) return false;
          setRule(s.row, a, Row::kAt, sa * s.dataAlign);
          continue;
        case 0x12:  // DW_CFA_def_cfa_sf
          if (!(p = uleb(p, end, a)) || !(p = sleb(p, end, sa))) return false;
          s.row.cfaReg = a;
          s.row.cfaOffset = sa * s.dataAlign;
          continue;
        case 0x13:  // DW_CFA_def_cfa_offset_sf
          if (!(p = sleb(p, end, sa))) return false;
          s.row.cfaOffset = sa * s.dataAlign;
          continue;
        case 0x14:  // DW_CFA_val_offset
          if (!(p = uleb(p, end, a)) || !(p = uleb(p, end, b))) return false;
          setRule(s.row, a, Row::kOther, 0);
          continue;
        case 0x15:  // DW_CFA_val_offset_sf
          if (!(p = uleb(p, end, a)) || !(p = sleb(p, end, sa))) return false;
          setRule(s.row, a, Row::kOther, 0);
          continue;
        case 0x2e:  // DW_CFA_GNU_args_size
          if (!(p = uleb(p, end, a))) return false;
          continue;
        case 0x2f:  // DW_CFA_GNU_negative_offset_extended
          if (!(p = uleb(p, end, a)) || !(p = uleb(p, end, b))) return false;
          setRule(s.row, a, Row::kAt, -static_cast<int64_t>(b) * s.dataAlign);
          continue;
        default:  // DW_CFA_set_loc and anything else
          return false;
      }
    }
    uintptr_t next = s.loc + advance * s.codeAlign;
    if (next > s.pc) return true;  // the current row covers pc
    s.loc = next;
  }
  return p != nullptr;
}

}  // namespace

// .eh_frame_hdr: u8 version 1, u8 eh_frame_ptr_enc, u8 fde_count_enc (udata4), u8 table_enc
// (datarel|sdata4), eh_frame_ptr, fde_count, then fde_count pairs (initial location, FDE
// address) sorted by location, each relative to the header.
FrameRule parseFrameRule(uintptr_t ehHdr, uintptr_t pc) {
  const auto* h = reinterpret_cast<const uint8_t*>(ehHdr);
  int ptrSize = encodedSize(h[1]);
  if (h[0] != 1 || ptrSize < 0 || h[2] != 0x03 || h[3] != 0x3b) return unknown();
  uint32_t count = read32(ehHdr + 4 + static_cast<uintptr_t>(ptrSize));
  uintptr_t table = ehHdr + 8 + static_cast<uintptr_t>(ptrSize);
  auto field = [&](uint32_t i, uint32_t which) {
    int32_t v;
    std::memcpy(&v, reinterpret_cast<const void*>(table + uintptr_t{i} * 8 + which * 4), 4);
    return ehHdr + static_cast<uintptr_t>(static_cast<intptr_t>(v));
  };
  // The last entry whose function starts at or before pc.
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (field(mid, 0) <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return unknown();
  const uintptr_t start = field(lo - 1, 0);
  const uintptr_t fde = field(lo - 1, 1);

  uint32_t fdeLen = read32(fde);
  if (fdeLen < 8 || fdeLen == 0xffffffffu) return unknown();
  const auto* fend = reinterpret_cast<const uint8_t*>(fde) + 4 + fdeLen;
  uintptr_t cie = fde + 4 - read32(fde + 4);
  uint32_t cieLen = read32(cie);
  if (cieLen < 8 || cieLen == 0xffffffffu) return unknown();
  const auto* c = reinterpret_cast<const uint8_t*>(cie) + 8;  // past length and CIE id
  const auto* cend = reinterpret_cast<const uint8_t*>(cie) + 4 + cieLen;
  uint8_t version = *c++;
  const auto* aug = reinterpret_cast<const char*>(c);
  while (c < cend && *c) ++c;
  if (c >= cend) return unknown();
  ++c;
  Program s;
  uint64_t raReg = 0, augLen = 0;
  if (!(c = uleb(c, cend, s.codeAlign)) || !(c = sleb(c, cend, s.dataAlign))) return unknown();
  if (version == 1) {
    raReg = *c++;
  } else if (!(c = uleb(c, cend, raReg))) {
    return unknown();
  }
  if (raReg != kRa) return unknown();
  int fdePtrSize = sizeof(void*);
  bool hasAugData = aug[0] == 'z';
  if (hasAugData) {
    if (!(c = uleb(c, cend, augLen)) || augLen > static_cast<uint64_t>(cend - c)) return unknown();
    const uint8_t* augEnd = c + augLen;
    for (const char* a = aug + 1; *a; ++a) {
      if (*a == 'R') {
        fdePtrSize = encodedSize(*c++);
      } else if (*a == 'P') {
        int n = encodedSize(*c++);
        if (n < 0) return unknown();
        c += n;
      } else if (*a == 'L') {
        ++c;
      } else {
        return unknown();  // 'S' (a signal frame) and anything newer
      }
    }
    c = augEnd;
  } else if (aug[0]) {
    return unknown();
  }
  if (fdePtrSize <= 0) return unknown();

  // The FDE: initial location (the table gave it), address range, augmentation data, program.
  const auto* f = reinterpret_cast<const uint8_t*>(fde) + 8;
  if (fend - f < 2 * fdePtrSize) return unknown();
  uint64_t range = readUnsigned(f + fdePtrSize, fdePtrSize);
  f += 2 * fdePtrSize;
  if (pc - start >= range) return unknown();  // between functions
  if (hasAugData) {
    uint64_t n;
    if (!(f = uleb(f, fend, n)) || n > static_cast<uint64_t>(fend - f)) return unknown();
    f += n;
  }
  s.loc = start;
  s.pc = pc;
  if (!execute(s, c, cend)) return unknown();
  s.initial = s.row;
  s.loc = start;
  if (!execute(s, f, fend)) return unknown();

  const Row& row = s.row;
  FrameRule r;
  if (row.ra == Row::kUndefined) {
    r.kind = FrameRule::kEnd;
    return r;
  }
  if ((row.cfaReg != kRsp && row.cfaReg != kRbp) || row.ra != Row::kAt || row.raAt != -8 ||
      row.cfaOffset < 16 || row.cfaOffset % 8 != 0 || row.cfaOffset >= rules::kMaxCfaOffset)
    return unknown();
  if (row.rbp == Row::kAt) {
    if (row.rbpAt > -16 || row.rbpAt % 8 != 0 || row.rbpAt < -8 * int64_t{rules::kMaxSlot})
      return unknown();
    r.rbpSlot = static_cast<uint8_t>(-row.rbpAt / 8);
  } else if (row.rbp != Row::kSame) {
    return unknown();
  }
  r.kind = row.cfaReg == kRsp ? FrameRule::kRsp : FrameRule::kRbp;
  r.cfaOffset = static_cast<uint32_t>(row.cfaOffset);
  return r;
}

}  // namespace heapman::rec
