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
//    16   8  firstSeq         records: the sequence number where the records chunk before it
//                             ended (one past its last event; the first records chunk: its
//                             first event's), so that chunk k+1 continues chunk k exactly;
//                             a RAM dump: the next event's sequence number when it was written
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
//     A  addresses and allocation distances
//     S  allocation dictionary references and new dictionary entries
//     M  time, thread and sequence changes, stack nodes, collected sets, extended records
//
// Decoder state, reset at the start of every chunk (so each chunk decodes on its own):
//     nextSeq = firstSeq, time = 0, thread = 0, lastNodeId = 0, lastFrame = 0, and the
//     prediction model (chunk_model.h): empty dictionary, no allocations, empty size classes,
//     zeroed free ring, lastAddress = 0, lastFreeOrdinal = -1.
// Event records take sequence number nextSeq, then nextSeq += 1, and carry the current time
// and thread. Definitions (stack nodes, collected sets, extended definitions) take no sequence
// number. Sequence numbers increase strictly through a log and stay at or below kMaxSeq; a
// gap, also one at the start of a chunk, is a SEQ record (check.h: the chunk sequence rules).
//
// Prediction model. Allocations of the chunk are numbered 0, 1, ... (their "ordinal"). Each
// allocation names an entry of the chunk's dictionary of AllocInfo {heap kind, size, actual
// size, stack id, type id}. Size classes are keyed by actual size (a 256-slot direct-mapped
// table; a slot is reset when another size claims it) and remember the class's last address,
// its stride (last - previous) and a LIFO of up to 128 addresses freed in the class. A ring
// remembers the last 64 freed addresses. The model changes only as follows:
//     allocation (any mode)   class.stride = addr - class.last; class.last = addr; LIFO popped
//                             or left when the mode is ALLOC_LIFO(_INFO, _AT); bumpGap = addr - bumpEnd;
//                             bumpEnd = addr + actual size; ordinal appended; lastAddress = addr
//     free of an ordinal      address pushed on its class LIFO and on the ring;
//                             lastFreeOrdinal = ordinal; lastAddress = address
//     free by address         address pushed on the ring; lastAddress = address
//     realloc                 old address pushed on the ring, then the new one is an allocation
//
// Tag byte:
//   0x00-0x3F  FREE_RECENT d    free of ordinal (allocCount - 1 - d)
//   0x40-0x4F  FREE_NEXT k      free of ordinal (lastFreeOrdinal + 1 + k)
//   0x50       FREE_ORDINAL     A: varint d, free of ordinal (allocCount - 1 - d)
//              (the three above: heap kind is the freed allocation's)
//   0x51       FREE_ADDRESS     M: u8 heap kind; A: zz (address - lastAddress)
//   0xF0       ALLOC_NEAR       A: zz (address - class.last)
//   0x52       ALLOC_LIFO_AT    A: u8 j < 128, address = class LIFO entry j below the top (the
//                               entry leaves the LIFO; those above it move down one)
//   0x53       ALLOC_SEQ        address = class.last + class.stride
//   0x54       ALLOC_BUMP       address = bumpEnd + bumpGap (the previous allocation's end plus
//                               the gap seen before it: consecutive blocks carved from one region)
//   0x55       ALLOC_RING       A: u8 d < 64, address = d-th most recently freed (ring)
//   0x56       ALLOC_ADDR       A: zz (address - lastAddress)
//   0x57       ALLOC_LIFO       address = top of the class LIFO
//              (these seven first read their dictionary reference from S, see below)
//   0x60-0xEF  ALLOC_LIFO_INFO i  address = top of the class LIFO, dictionary entry i (< 144);
//                               nothing in S: the commonest allocation costs one byte
//   0x58       REALLOC          S: dictionary reference; A: zz (old - lastAddress), zz (new - old)
//   0x59       TIME             M: zz delta ns from the current time (time starts at 0 in each
//                               chunk: ns since Header.startClockNs)
//   0x5A       THREAD           M: varint thread index (see ThreadStart)
//   0x5B       SEQ              M: zz d; the next event takes nextSeq + d (a gap; a writer merging
//                               threads out of order may also step back)
//   0x5C       STACK_NATIVE     definition: M: zz (id - lastNodeId), zz (id - parentId),
//                               zz (frame - lastFrame). Stack id 0 is the empty stack; a stack is
//                               named by its leaf node id, its frames are the parent chain to 0.
//   0x5D       STACK_MANAGED    same layout; frame is a MethodDef id
//   0x5E       COLLECTED        objects GC #gcNumber collected. No sequence number: it belongs
//                               to its GC, appears between that GC's GcBegin and GcEnd, and
//                               replay applies it at the GcEnd. M: varint gcNumber, varint count,
//                               count x varint address deltas (ascending, the first from 0). A
//                               large set is split into several COLLECTED records.
//   0x5F       EXTENDED         M: varint ExtKind, varint flags (bit 1: event, takes a sequence
//                               number), varint length, then `length` bytes: a Cap'n Proto packed
//                               message whose root is the struct ExtKind names. Unknown kinds
//                               are skipped by length and still take their sequence number.
//   0xF1-0xFF  reserved: a reader meeting one refuses the chunk (it needs a newer HeapMan).
//              New kinds of records go into EXTENDED kinds instead where they can.
//
// Dictionary reference (S): varint i. i < entries: entry i. i == entries: a new entry follows
// and is appended: u8 heap kind, varint size, varint (actual size - size), varint stack id,
// varint type id (0: none).
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
inline constexpr uint16_t kFormatMinor = 2;  // 1: TypeDef layouts; 2: code chunks marked
inline constexpr uint16_t kOldestMajor = 1;

inline constexpr size_t kPrefixSize = 24;
inline constexpr size_t kChunkHeaderSize = 40;
inline constexpr size_t kTrailerSize = 16;
// Upper bound on a chunk's raw payload; readers refuse larger (corruption guard).
inline constexpr uint32_t kMaxChunkRaw = 64u << 20;
inline constexpr uint32_t kMaxHeaderLength = 16u << 20;
// Largest sequence number a log may hold (2^40 - 1, a trillion events): readers pack sequence
// numbers into 40 bits. Larger ones are corruption (a flipped SEQ record, say).
inline constexpr uint64_t kMaxSeq = (uint64_t{1} << 40) - 1;
// Allocation addresses are user-space pointers: below 2^48 (or 0, an allocation that failed).
inline constexpr uint64_t kAddressLimit = uint64_t{1} << 48;

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
  kObject = 0,       // bytes of live objects: one object (format minor 0), or from minor 1 a
                     // run of adjacent live objects cut at 4 KiB address boundaries (an
                     // object may span several segments); readers look bytes up by address
  kStaticRoot = 1,   // static data segment / registered root range
  kThreadStack = 2,  // a thread's stack, from its stack pointer to its stack base
  kOther = 3,
  kObjectList = 4,   // from format minor 1: where the dumped objects starting in the 4 KiB page
                     // at `address` start and end: varint pairs (start - previous start, the
                     // first from the page; size), ascending. With them, object segments are
                     // runs of bytes and readers take object boundaries from the lists.
};
const char* segmentKindName(SegmentKind k);

// Tag values of the records stream (see the layout comment above).
namespace tag {
inline constexpr uint8_t kFreeRecent = 0x00;  // + d, d < kFreeRecentSpan
inline constexpr uint8_t kFreeRecentSpan = 0x40;
inline constexpr uint8_t kFreeNext = 0x40;  // + k, k < kFreeNextSpan
inline constexpr uint8_t kFreeNextSpan = 0x10;
inline constexpr uint8_t kFreeOrdinal = 0x50;
inline constexpr uint8_t kFreeAddress = 0x51;
inline constexpr uint8_t kAllocLifoAt = 0x52;
inline constexpr uint8_t kAllocSeq = 0x53;
inline constexpr uint8_t kAllocBump = 0x54;
inline constexpr uint8_t kAllocRing = 0x55;
inline constexpr uint8_t kAllocAddr = 0x56;
inline constexpr uint8_t kAllocLifo = 0x57;
inline constexpr uint8_t kRealloc = 0x58;
inline constexpr uint8_t kTime = 0x59;
inline constexpr uint8_t kThread = 0x5A;
inline constexpr uint8_t kSeq = 0x5B;
inline constexpr uint8_t kStackNative = 0x5C;
inline constexpr uint8_t kStackManaged = 0x5D;
inline constexpr uint8_t kCollected = 0x5E;
inline constexpr uint8_t kExtended = 0x5F;
inline constexpr uint8_t kAllocLifoInfo = 0x60;  // + i, i < kAllocLifoInfoSpan
inline constexpr unsigned kAllocLifoInfoSpan = 0x90;
inline constexpr uint8_t kAllocNear = 0xF0;
inline constexpr uint8_t kFirstReserved = 0xF1;
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
  kGcHandle = 16,     // event: GcHandle (created or deleted)
  kFinalize = 17,     // event: Finalize
};
inline constexpr uint32_t kExtKindMax = 17;
// Whether an extended kind is an event (takes a sequence number, time and thread).
bool extKindIsEvent(ExtKind k);

}  // namespace heapman::log
