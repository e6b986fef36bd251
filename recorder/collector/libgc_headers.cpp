// libgc's header table found and walked (libgc_headers.h).
#include "libgc_headers.h"

#include <algorithm>

#include "gc_tracking.h"

namespace heapman::rec::gc::libgc {

namespace {

// `size` bytes at `address` into `to` through the kernel: false where any of it is not readable.
bool readSafely(void* to, uint64_t address, size_t size) {
  return copyOwnMemory(static_cast<uint8_t*>(to), address, size) == size;
}

bool readWord(uint64_t address, uint64_t& out) {
  return (address & 7) == 0 && address > 4095 && readSafely(&out, address, sizeof out);
}

// The bottom index of `top` with key `hi`: the hash chain of its slot, read safely.
uint64_t bottomOf(const uint64_t* top, uint64_t hi) {
  uint64_t bi = top[hi & (kTopSize - 1)];
  for (int steps = 0; steps < 64; ++steps) {
    uint64_t key, link;
    if (!readWord(bi + kKeyOffset, key) || !readWord(bi + kHashLinkOffset, link)) return 0;
    if (key == hi) return bi;
    bi = link;
  }
  return 0;
}

// Whether `known` is found through `top` as libgc would find it.
bool findsObject(const uint64_t* top, const KnownObject& known) {
  uint64_t block = known.address & ~(kBlockBytes - 1);
  uint64_t bi = bottomOf(top, known.address >> kBottomShift);
  uint64_t hdr;
  if (!bi || !readWord(bi + ((known.address / kBlockBytes) & (kBottomSize - 1)) * 8, hdr))
    return false;
  uint8_t h[kHdrMarks + kBlockBytes / kGranuleBytes];
  if (hdr < kBlockBytes || !readSafely(h, hdr, sizeof h)) return false;
  return word(h, kHdrBlock) == block && word(h, kHdrSize) == known.bytes &&
         !(h[kHdrFlags] & kFreeBlock) && word(h, kHdrMarkCount) != 0 &&
         h[kHdrMarks + (known.address - block) / kGranuleBytes] == 1;
}

// The slots of `top` that are not `nils` hold chains of bottom indices whose keys hash to the
// slot, ending at `nils`; `nils` holds no header.
bool chainsHold(const uint64_t* top, uint64_t nils) {
  uint64_t nilHeaders[kBottomSize];
  if (!readSafely(nilHeaders, nils, sizeof nilHeaders)) return false;
  for (uint64_t h : nilHeaders)
    if (h) return false;
  for (uint32_t slot = 0; slot < kTopSize; ++slot) {
    uint64_t bi = top[slot];
    for (int steps = 0; bi != nils; ++steps) {
      uint64_t key;
      if (steps == 64 || !readWord(bi + kKeyOffset, key) || (key & (kTopSize - 1)) != slot ||
          !readWord(bi + kHashLinkOffset, bi))
        return false;
    }
  }
  return true;
}

// The value most slots of `top` hold (GC_all_nils, when this is the table), if it holds half.
uint64_t commonValue(const uint64_t* top) {
  uint64_t candidate = 0;
  int count = 0;  // majority vote, then a count
  for (uint32_t i = 0; i < kTopSize; ++i) {
    if (count == 0) candidate = top[i];
    count += top[i] == candidate ? 1 : -1;
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < kTopSize; ++i) n += top[i] == candidate;
  return n >= kTopSize / 2 ? candidate : 0;
}

}  // namespace

bool findTable(const uint8_t* arrays, size_t bytes, const KnownObject* known, int n, Table& out) {
  const size_t tableBytes = kTopSize * sizeof(uint64_t);
  if (n <= 0 || bytes < tableBytes || reinterpret_cast<uintptr_t>(arrays) % 8) return false;
  // From the end down: libgc 8.2 keeps the table last, so the first place tried is the one.
  for (size_t offset = (bytes - tableBytes) & ~size_t{7};; offset -= 8) {
    const auto* top = reinterpret_cast<const uint64_t*>(arrays + offset);
    uint64_t nils = commonValue(top);
    bool found = nils > 4095 && (nils & 7) == 0;
    for (int i = 0; found && i < n; ++i) found = findsObject(top, known[i]);
    // GC_all_nils is itself a field of GC_arrays, before the table.
    bool nilsField = false;
    for (size_t at = 0; found && !nilsField && at < offset; at += 8)
      nilsField = word(arrays, at) == nils;
    if (found && nilsField && chainsHold(top, nils)) {
      out.top = top;
      out.nils = nils;
      return true;
    }
    if (offset == 0) return false;
  }
}

int bottomIndices(const Table& t, const uint8_t** out, int max) {
  int n = 0;
  for (uint32_t slot = 0; slot < kTopSize; ++slot) {
    for (uint64_t bi = t.top[slot]; bi != t.nils;) {
      if (!bi || n == max) return -1;
      const auto* p = reinterpret_cast<const uint8_t*>(bi);
      if ((word(p, kKeyOffset) & (kTopSize - 1)) != slot) return -1;
      out[n++] = p;
      bi = word(p, kHashLinkOffset);
    }
  }
  std::sort(out, out + n, [](const uint8_t* a, const uint8_t* b) {
    return word(a, kKeyOffset) < word(b, kKeyOffset);
  });
  return n;
}

}  // namespace heapman::rec::gc::libgc
