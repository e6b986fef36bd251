// HeapMan transaction log: the on-disk layout, byte by byte.
//
// All integers are little-endian. "varint" is unsigned LEB128 (7 bits per byte, low group first,
// high bit = more); "zz" is a zigzag-mapped signed value stored as a varint ((v << 1) ^ (v >> 63)).
//
// FILE
//   Prefix     24 bytes, never changes shape (kPrefixSize)
//     0   8  magic            "HEAPMAN\x1a"
//     8   2  major            format major version; readers refuse a major they do not know
//    10   2  minor            format minor version; additions only, older readers keep reading
//    12   4  headerLength     bytes of the header message that follow the prefix
//    16   8  headerChecksum   XXH3-64 of those headerLength bytes
//   Header     headerLength bytes: a Cap'n Proto *packed* message, root `Header` (heapman.capnp)
//   Chunk*     zero or more chunks, back to back, each self-contained (see CHUNK)
//   Footer     only in a log whose recorder finished: one chunk of type kChunkIndex (root `Index`
//              of heapman.capnp), then the 16-byte trailer:
//     0   8  indexOffset      file offset of the index chunk's header
//     8   8  magic            "HMFOOTER"
//   A log without a valid trailer is "truncated": readers scan chunks from the front and stop at
//   the last intact one.
//
// CHUNK
//   Chunk header, 40 bytes (kChunkHeaderSize)
//     0   4  magic            "HMCK"
//     4   2  type             ChunkType; readers skip types they do not know, by length
//     6   2  flags            bit 0: payload is LZ4 block-compressed (else stored raw)
//     8   4  storedLength     payload bytes on disk that follow this header
//    12   4  rawLength        payload bytes after decompression (== storedLength when raw)
//    16   8  firstSeq         sequence number of the first event record in the chunk
//    24   4  recordCount      records in the chunk (events and definitions)
//    28   4  headerCheck      low 32 bits of XXH3-64 of header bytes 0..27
//    32   8  payloadChecksum  XXH3-64 of the storedLength payload bytes as stored
//   The header check lets a reader trust the lengths before it follows them, so a flipped bit in a
//   length is reported as corruption of that chunk rather than as a truncated file.
//
// RECORDS CHUNK (kChunkRecords) raw payload: four streams, struct-of-arrays style, so that LZ4
// sees runs of like with like (tags with tags, addresses with addresses).
//     varint  length of stream T (tags), A (addresses), S (allocation attributes); stream M
//             (everything else) runs to the end of the payload
//     T  one tag byte per record
//     A  addresses of allocations, frees and reallocs
//     S  sizes, stack ids and type ids of allocations and reallocs
//     M  sequence gaps, time and thread changes, stack nodes, collected sets, extended records
//   Decoder state, reset at the start of every chunk (so each chunk decodes on its own):
//     nextSeq = firstSeq, time = 0, thread = 0, lastAddress = 0, lastFrame = 0, lastNodeId = 0,
//     recentAllocs[64] = 0, recentFrees[64] = 0 (address rings, see kTagAddr*)
//   Event records take sequence number nextSeq, then nextSeq += 1; a record whose tag has
//   kTagExplicitSeq first reads zz d from M and takes nextSeq + d (then nextSeq = that + 1).
//   Event records carry the current time and thread; definition records (stack nodes, and the
//   extended definitions listed in ExtKind) carry neither and take no sequence number.
//
//   Tag byte:
//   0x00-0x3F  ALLOC      bits 0-2 HeapKind, bit 3 has type id, bit 4 explicit seq, bit 5 address
//                         from the recent-frees ring
//              M: [zz seq delta]
//              A: one byte ring distance (bit 5), else zz (address - lastAddress)
//              S: varint requested size, varint (actual size - requested size), varint stack id,
//                 [varint type id]
//   0x40-0x5F  FREE       bits 0-2 HeapKind, bit 3 address from the recent-allocs ring,
//                         bit 4 explicit seq
//              M: [zz seq delta]
//              A: one byte ring distance (bit 3), else zz (address - lastAddress)
//   0x60-0x67  REALLOC    bits 0-2 HeapKind
//              M: varint flags (bit 0 explicit seq, bit 1 has type id), [zz seq delta]
//              A: zz (old - lastAddress), zz (new - old)
//              S: varint size, varint (actual - size), varint stack id, [varint type id]
//   0x68       TIME       M: zz delta ns from the current time (the first TIME of a chunk is
//                         absolute: ns since Header.startClockNs)
//   0x69       THREAD     M: varint thread index (recorder-assigned, see ThreadStart)
//   0x6A       STACK NODE native frame (definition):
//                         M: zz (id - lastNodeId), zz (id - parentId), zz (frame - lastFrame)
//                         Stack id 0 is the empty stack; a stack is named by its leaf node's id,
//                         its frames are the chain of parents up to id 0, leaf first.
//   0x6B       STACK NODE managed frame: same layout, frame = a MethodDef id
//   0x6C       COLLECTED  objects GC #gcNumber collected (takes no sequence number: it belongs to
//                         its GC and appears between that GC's GcBegin and GcEnd; replay applies
//                         it at the GcEnd): M: varint gcNumber, varint count,
//                         count x varint address deltas (ascending; the first from 0).
//                         A large set is split into several COLLECTED records.
//   0x6D       EXTENDED   M: varint ExtKind, varint flags (bit 0 explicit seq, bit 1 event: takes
//                            a sequence number, time and thread), [zz seq delta],
//                            varint length, then `length` bytes: a Cap'n Proto packed message
//                            whose root is the struct ExtKind names. Unknown kinds are skipped by
//                            length (a newer minor version added them).
//   0x6E-0xFF  reserved: a reader meeting one refuses the chunk (it needs a newer HeapMan).
//   Sequence numbers increase strictly through a log; the explicit-seq form encodes gaps (and
//   the writer's merge of per-thread buffers) without breaking that rule.
//
//   Address rings: after each ALLOC (and the new address of a REALLOC) the address is pushed to
//   recentAllocs; after each FREE (and the old address of a REALLOC) to recentFrees. Push writes
//   ring[head & 63] and increments head. "Distance" d (0..63) names ring[(head - 1 - d) & 63].
//
// RAM DUMP CHUNK (kChunkRamDump) raw payload: a sequence of segments
//     u8      kind             SegmentKind
//     u8      flags            bit 0: bytes are stored here; otherwise they equal an earlier
//                              segment's bytes with the same content hash
//     varint  gcNumber, varint address, varint length
//     u64     content hash     XXH3-64 of the segment's bytes
//     [bytes] length bytes when flags bit 0
//
// INDEX CHUNK (kChunkIndex): raw payload is a Cap'n Proto packed message, root `Index`.
#pragma once

#include <cstddef>
#include <cstdint>

namespace heapman::log {

inline constexpr char kMagic[8] = {'H', 'E', 'A', 'P', 'M', 'A', 'N', '\x1a'};
inline constexpr char kChunkMagic[4] = {'H', 'M', 'C', 'K'};
inline constexpr char kFooterMagic[8] = {'H', 'M', 'F', 'O', 'O', 'T', 'E', 'R'};

// Bump kFormatMajor for a layout change old readers cannot follow; kFormatMinor for additions
// (new extended kinds, new chunk types, new Cap'n Proto fields). Independent of release versions.
inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 0;
inline constexpr uint16_t kOldestMajor = 1;

inline constexpr size_t kPrefixSize = 24;
inline constexpr size_t kChunkHeaderSize = 40;
inline constexpr size_t kTrailerSize = 16;
// Upper bound on a chunk's raw payload; readers refuse larger (corruption guard).
inline constexpr uint32_t kMaxChunkRaw = 64u << 20;
inline constexpr uint32_t kMaxHeaderLength = 16u << 20;

enum class ChunkType : uint16_t {
  kRecords = 1,
  kRamDump = 2,
  kIndex = 3,
};

inline constexpr uint16_t kChunkFlagLz4 = 1;

// Which heap an allocation lives in. Fits in three bits of the record tag.
enum class HeapKind : uint8_t {
  kNative = 0,           // glibc malloc family (C++ new/delete arrive here)
  kGcNormal = 1,         // bdwgc GC_malloc / GC_malloc_kind(NORMAL)
  kGcAtomic = 2,         // bdwgc pointer-free objects
  kGcUncollectable = 3,  // bdwgc GC_malloc_uncollectable
  kGcj = 4,              // bdwgc GC_gcj_malloc
  kGcTyped = 5,          // bdwgc GC_malloc_explicitly_typed and friends
  kManaged = 6,          // Mono managed objects
  kOther = 7,            // any other allocator the recorder learns about
};
inline constexpr int kHeapKindCount = 8;
const char* heapKindName(HeapKind k);

enum class SegmentKind : uint8_t {
  kObject = 0,       // bytes of one live object
  kStaticRoot = 1,   // static data segment / registered root range
  kThreadStack = 2,  // a thread's stack, from its stack pointer to its stack base
  kOther = 3,
};
const char* segmentKindName(SegmentKind k);

// Tag values of the records stream (see the layout comment above).
namespace tag {
inline constexpr uint8_t kAlloc = 0x00;
inline constexpr uint8_t kAllocHasType = 0x08;
inline constexpr uint8_t kAllocExplicitSeq = 0x10;
inline constexpr uint8_t kAllocRing = 0x20;
inline constexpr uint8_t kFree = 0x40;
inline constexpr uint8_t kFreeRing = 0x08;
inline constexpr uint8_t kFreeExplicitSeq = 0x10;
inline constexpr uint8_t kRealloc = 0x60;
inline constexpr uint8_t kTime = 0x68;
inline constexpr uint8_t kThread = 0x69;
inline constexpr uint8_t kStackNative = 0x6A;
inline constexpr uint8_t kStackManaged = 0x6B;
inline constexpr uint8_t kCollected = 0x6C;
inline constexpr uint8_t kExtended = 0x6D;
inline constexpr uint8_t kFirstReserved = 0x6E;
}  // namespace tag

inline constexpr unsigned kRingSize = 64;

// Kinds of EXTENDED records; each names the heapman.capnp struct its body holds. Never renumber.
enum class ExtKind : uint32_t {
  kString = 1,        // definition: LogString
  kTypeDef = 2,       // definition: TypeDef
  kMethodDef = 3,     // definition: MethodDef
  kGcBegin = 4,       // event: GcBegin
  kGcEnd = 5,         // event: GcEnd
  kRootRange = 6,     // event: RootRange (added or removed)
  kRootSet = 7,       // event: RootSet (static roots and thread stacks seen at a GC)
  kCustomEvent = 8,   // event: CustomEvent
  kFrameMark = 9,     // event: FrameMark
  kThreadStart = 10,  // event: ThreadStart
  kThreadStop = 11,   // event: ThreadStop
  kModuleLoad = 12,   // event: ModuleLoad
  kModuleUnload = 13, // event: ModuleUnload
  kJitRange = 14,     // event: JitRange
  kLost = 15,         // event: Lost
};
inline constexpr uint32_t kExtKindMax = 15;
// Whether an extended kind is an event (takes a sequence number, time and thread).
bool extKindIsEvent(ExtKind k);

}  // namespace heapman::log
