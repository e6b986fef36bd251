// libgc's block headers, read directly, so that a collection's mark bits are copied a block at a
// time (gc_tracking.cpp) instead of one callback per marked object. libgc 8.2 exports neither its
// block walk (GC_apply_to_all_blocks) nor its header lookup; it does export GC_arrays, the
// structure whose last field is the header table. Layout of libgc 8.2 on 64-bit Linux (headers.c,
// include/private/gc_hdrs.h, gc_priv.h), which findTable() proves on live objects before anything
// else reads it:
//   top index: TOP_SZ = 2048 pointers to bottom indices, slot = (address >> 22) & 2047; slots
//     with no block hold GC_all_nils (an empty bottom index, also a field of GC_arrays).
//   bottom index: 1024 header pointers, one per 4 KiB block (address >> 12 & 1023), then the
//     ascending and descending links, key (address >> 22) at +0x2010, hash_link at +0x2018 (the
//     next bottom index of the same slot). A header pointer below 4096 is 0 (no block) or the
//     distance back to the first block of a large object.
//   header: hb_block at +16, hb_flags at +25 (FREE_BLK = 4), hb_sz (object size, bytes) at +32,
//     hb_n_marks at +56, hb_marks at +64: a byte per 16-byte granule (Debian builds with parallel
//     marking, hence mark bytes), set at each marked object's first granule.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heapman::rec::gc::libgc {

inline constexpr uint64_t kBlockBytes = 4096;
inline constexpr uint64_t kGranuleBytes = 16;
inline constexpr uint64_t kMaxSmallObject = kBlockBytes / 2;  // larger: one object per block
inline constexpr uint32_t kTopSize = 2048;
inline constexpr uint32_t kBottomSize = 1024;
inline constexpr unsigned kBottomShift = 22;  // log2(kBottomSize * kBlockBytes)
inline constexpr size_t kKeyOffset = 0x2010, kHashLinkOffset = 0x2018;
inline constexpr size_t kHdrBlock = 16, kHdrFlags = 25, kHdrSize = 32, kHdrMarkCount = 56,
                        kHdrMarks = 64;
inline constexpr uint8_t kFreeBlock = 4;

struct Table {
  const uint64_t* top = nullptr;  // kTopSize slots inside GC_arrays
  uint64_t nils = 0;              // GC_all_nils: the slots with no block
};

// An object the collector reported marked, with its size (GC_enumerate_reachable_objects_inner).
struct KnownObject {
  uint64_t address, bytes;
};

// Searches the `bytes` of GC_arrays for a top index through which every one of `known` is found:
// its block's header has hb_block equal to the object's block, hb_sz equal to its size, not free,
// its mark byte set; the slots that are not GC_all_nils lead to bottom indices whose keys hash to
// their slot. Every word outside GC_arrays is read through the kernel (process_vm_readv), which
// reports a bad address instead of faulting. Allocation lock held (the table does not move).
bool findTable(const uint8_t* arrays, size_t bytes, const KnownObject* known, int n, Table& out);

// The bottom indices in use, ascending by key (GC_apply_to_all_blocks' order), into `out`; their
// number, or -1 when the table does not look as findTable() found it (a key in the wrong slot, a
// null link, more than `max`).
int bottomIndices(const Table& t, const uint8_t** out, int max);

inline uint64_t word(const uint8_t* p, size_t offset) {
  return *reinterpret_cast<const uint64_t*>(p + offset);
}

}  // namespace heapman::rec::gc::libgc
