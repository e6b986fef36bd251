// Unwind rules read from call-frame information (recorder/core/unwind.h, parseFrameRule): a
// hand-assembled .eh_frame_hdr and .eh_frame in memory, the way GCC and glibc write them, and
// the rule at chosen addresses of each function.
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "unwind.h"

namespace {

using heapman::rec::FrameRule;
using heapman::rec::parseFrameRule;

// One function: where it starts (bytes past the header), its length and its FDE's call-frame
// instructions. The CIE (shared) says: code alignment 1, data alignment -8, return address in
// r16, pointers pcrel|sdata4, CFA = rsp + 8, return address at CFA - 8.
struct Fn {
  uint32_t start, length;
  std::vector<uint8_t> program;
};

class EhFrame {
 public:
  explicit EhFrame(const std::vector<Fn>& fns) {
    const uint32_t table = 12;
    const uint32_t cieAt = table + 8 * static_cast<uint32_t>(fns.size());
    bytes_.resize(cieAt);
    bytes_[0] = 1;     // version
    bytes_[1] = 0x1b;  // eh_frame_ptr: pcrel|sdata4
    bytes_[2] = 0x03;  // fde_count: udata4
    bytes_[3] = 0x3b;  // table: datarel|sdata4
    put32(4, cieAt - 4);
    put32(8, static_cast<uint32_t>(fns.size()));
    // The CIE.
    std::vector<uint8_t> cie = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
                                0x0c, 7, 8,   // DW_CFA_def_cfa r7 (rsp), 8
                                0x90, 1};     // DW_CFA_offset r16 at CFA - 8
    appendEntry(cie);
    for (size_t i = 0; i < fns.size(); ++i) {
      const uint32_t fdeAt = static_cast<uint32_t>(bytes_.size());
      std::vector<uint8_t> fde(4 + 4 + 4 + 1);  // CIE pointer, pc_begin, pc_range, aug length 0
      const uint32_t ciePointer = fdeAt + 4 - cieAt;  // back from this field to the CIE
      std::memcpy(fde.data(), &ciePointer, 4);
      const auto begin = static_cast<int32_t>(fns[i].start - (fdeAt + 8));  // pcrel
      std::memcpy(fde.data() + 4, &begin, 4);
      std::memcpy(fde.data() + 8, &fns[i].length, 4);
      fde.insert(fde.end(), fns[i].program.begin(), fns[i].program.end());
      appendEntry(fde);
      put32(table + 8 * static_cast<uint32_t>(i), fns[i].start);
      put32(table + 8 * static_cast<uint32_t>(i) + 4, fdeAt);
    }
    // Room for the functions' "code" the addresses point into (never read).
    bytes_.resize(bytes_.size() + 0x1000);
  }
  uintptr_t base() const { return reinterpret_cast<uintptr_t>(bytes_.data()); }
  FrameRule at(uint32_t offset) const { return parseFrameRule(base(), base() + offset); }

 private:
  void put32(uint32_t at, uint32_t v) { std::memcpy(bytes_.data() + at, &v, 4); }
  // Length-prefixed, padded with DW_CFA_nop to a multiple of 4.
  void appendEntry(std::vector<uint8_t> body) {
    while ((body.size() + 4) % 4) body.push_back(0);
    auto len = static_cast<uint32_t>(body.size());
    const uint8_t* l = reinterpret_cast<const uint8_t*>(&len);
    bytes_.insert(bytes_.end(), l, l + 4);
    bytes_.insert(bytes_.end(), body.begin(), body.end());
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace

TEST_CASE("unwind rules: frames with and without a frame pointer, epilogues, the outermost",
          "[recorder][unwind]") {
  const uint32_t f1 = 0x400, f2 = 0x500, f3 = 0x600, f4 = 0x700;
  EhFrame eh({
      // push %rbp; push %rbx; sub $24,%rsp ... at 0x40 an epilogue (pop %rbx) with
      // remember/restore_state around it, as GCC writes a return in the middle.
      {f1, 0x80, {0x41, 0x0e, 16, 0x86, 2,   // +1: CFA = rsp + 16, rbp at CFA - 16
                  0x41, 0x0e, 24, 0x83, 3,   // +2: CFA = rsp + 24, rbx at CFA - 24
                  0x44, 0x0e, 48,            // +6: CFA = rsp + 48
                  0x40 | 0x3a, 0x0a,         // +0x40: remember_state
                  0x0e, 16,                  //   CFA = rsp + 16
                  0x41, 0x0b}},              // +0x41: restore_state
      // push %rbp; mov %rsp,%rbp: CFA = rbp + 16 from +4 on
      {f2, 0x40, {0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6}},
      // _start: the return address is undefined
      {f3, 0x20, {0x07, 16}},
      // stack realignment: the CFA is a DWARF expression
      {f4, 0x20, {0x41, 0x0f, 2, 0x77, 0x08}},
  });

  FrameRule r = eh.at(f1 + 0x20);
  CHECK(r.kind == FrameRule::kRsp);
  CHECK(r.cfaOffset == 48);
  CHECK(r.rbpSlot == 2);
  r = eh.at(f1 + 0x40);  // inside the epilogue
  CHECK(r.kind == FrameRule::kRsp);
  CHECK(r.cfaOffset == 16);
  r = eh.at(f1 + 0x41);  // after restore_state
  CHECK(r.kind == FrameRule::kRsp);
  CHECK(r.cfaOffset == 48);
  CHECK(r.rbpSlot == 2);
  r = eh.at(f1 + 1);  // after the push of rbp: rbp saved, nothing else yet
  CHECK(r.kind == FrameRule::kRsp);
  CHECK(r.cfaOffset == 16);
  CHECK(eh.at(f1).kind == FrameRule::kUnknown);  // the CIE's row: no room for a call there

  r = eh.at(f2 + 0x10);
  CHECK(r.kind == FrameRule::kRbp);
  CHECK(r.cfaOffset == 16);
  CHECK(r.rbpSlot == 2);

  CHECK(eh.at(f3 + 4).kind == FrameRule::kEnd);
  CHECK(eh.at(f4 + 4).kind == FrameRule::kUnknown);
  CHECK(eh.at(f1 + 0x90).kind == FrameRule::kUnknown);  // between functions
  CHECK(eh.at(0x100).kind == FrameRule::kUnknown);       // before the first
}

TEST_CASE("unwind rules: rbp left alone, rbp saved deeper", "[recorder][unwind]") {
  const uint32_t f1 = 0x400, f2 = 0x500;
  EhFrame eh({
      {f1, 0x40, {0x41, 0x0e, 16, 0x83, 2, 0x44, 0x0e, 32}},  // push %rbx; sub $16: rbp kept
      {f2, 0x40, {0x41, 0x0e, 16, 0x83, 2, 0x41, 0x0e, 24, 0x86, 3, 0x41, 0x0e, 32}},
  });
  FrameRule r = eh.at(f1 + 0x10);
  CHECK(r.kind == FrameRule::kRsp);
  CHECK(r.cfaOffset == 32);
  CHECK(r.rbpSlot == 0);
  r = eh.at(f2 + 0x10);
  CHECK(r.kind == FrameRule::kRsp);
  CHECK(r.cfaOffset == 32);
  CHECK(r.rbpSlot == 3);
}
