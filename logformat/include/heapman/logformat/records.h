// The records of a HeapMan log as plain C++ values: what LogWriter takes and what decoding yields.
// Encodings are in format.h; the Cap'n Proto twins of the extended ones in heapman.capnp.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "heapman/logformat/format.h"

namespace heapman::log {

// Fields every event record carries. `seq` is the global order; `timeNs` counts from
// Header::startClockNs; `thread` is the recorder's thread index (see ThreadStart), or
// kRecorderThread for events the recorder adds itself (module loads it discovers).
inline constexpr uint32_t kRecorderThread = 0xFFFFFFFF;

struct EventCommon {
  uint64_t seq = 0;
  uint64_t timeNs = 0;
  uint32_t thread = 0;
  bool operator==(const EventCommon&) const = default;
};

struct Alloc {
  EventCommon ev;
  HeapKind heap = HeapKind::kNative;
  uint64_t address = 0;
  uint64_t size = 0;        // requested
  uint64_t actualSize = 0;  // usable size the allocator gave (>= size)
  uint32_t stackId = 0;
  uint32_t typeId = 0;      // 0: no type
  bool operator==(const Alloc&) const = default;
};

struct Free {
  EventCommon ev;
  HeapKind heap = HeapKind::kNative;
  uint64_t address = 0;
  bool operator==(const Free&) const = default;
};

struct Realloc {
  EventCommon ev;
  HeapKind heap = HeapKind::kNative;
  uint64_t oldAddress = 0;
  uint64_t newAddress = 0;
  uint64_t size = 0;
  uint64_t actualSize = 0;
  uint32_t stackId = 0;
  uint32_t typeId = 0;
  bool operator==(const Realloc&) const = default;
};

// Definition: one node of the stack trie. `frame` is an instruction address, or a MethodDef id
// when `managed`.
struct StackNode {
  uint32_t id = 0;
  uint32_t parent = 0;
  uint64_t frame = 0;
  bool managed = false;
  bool operator==(const StackNode&) const = default;
};

// Objects GC #gcNumber collected (addresses ascending). Several records may make up one set; they
// take effect at that GC's GcEnd.
struct Collected {
  uint32_t gcNumber = 0;
  std::vector<uint64_t> addresses;
  bool operator==(const Collected&) const = default;
};

struct LogString {
  uint32_t id = 0;
  std::string text;
  bool operator==(const LogString&) const = default;
};

// Where a type's objects hold references (schema TypeLayout).
enum class TypeLayout : uint8_t { kUnknown = 0, kPointerFree = 1, kFields = 2, kArray = 3 };

struct TypeDef {
  uint32_t id = 0;
  std::string name;
  uint64_t instanceSize = 0;
  uint64_t descriptor = 0;
  TypeLayout layout = TypeLayout::kUnknown;
  std::vector<uint32_t> refOffsets;  // kFields: from the object's start; kArray: in an element
  uint32_t elementSize = 0;          // kArray
  uint32_t dataOffset = 0;           // kArray
  bool operator==(const TypeDef&) const = default;
};

struct MethodDef {
  uint32_t id = 0;
  std::string name;
  uint64_t handle = 0;
  bool operator==(const MethodDef&) const = default;
};

struct GcBegin {
  EventCommon ev;
  uint32_t gcNumber = 0;
  uint64_t heapSize = 0;
  int32_t generation = -1;
  bool operator==(const GcBegin&) const = default;
};

struct GcEnd {
  EventCommon ev;
  uint32_t gcNumber = 0;
  uint64_t heapSize = 0;
  uint64_t freeBytes = 0;
  uint64_t pauseNs = 0;
  bool operator==(const GcEnd&) const = default;
};

// Matches schema RootSource.
enum class RootSource : uint8_t {
  kStaticData = 0,
  kRegistered = 1,
  kThreadStack = 2,
  kMonoStatic = 3,
  kMonoThreadStatic = 4,
  kMonoDomain = 5,
  kMonoHandle = 6,
  kMonoStack = 7,
  kOther = 8,
  // Words a program's own mark procedures pushed from memory outside the collected heap
  // (GC_mark_and_push with a source outside every object: guile's mmap'd VM stacks, marked by its
  // thread objects' procedure). The collector treats them as roots; no root range holds them.
  kMarkProcedure = 9,
  // A range the program pushed itself (GC_push_all, GC_push_all_eager, GC_push_conditional called
  // from outside the collector: ECL's push-other-roots procedure, which replaces the collector's
  // scan of static data).
  kPushedRange = 10,
  // Objects the collector found unreachable and queued for their finalizer: it keeps them (and
  // all they reach) alive until the finalizer has run, through pointers no scan of memory finds
  // (bdwgc hides them). The recorder keeps the queue from the collector's await-finalize proc
  // and lists it as a table of object addresses (docs/DESIGN.md 2.2, 2.3).
  kFinalizeQueue = 11,
};
inline constexpr RootSource kLastRootSource = RootSource::kFinalizeQueue;
const char* rootSourceName(RootSource s);

struct RootRange {
  EventCommon ev;
  bool added = true;
  uint64_t address = 0;
  uint64_t size = 0;
  RootSource source = RootSource::kRegistered;
  std::string label;
  bool operator==(const RootRange&) const = default;
};

struct RootEntry {
  uint64_t address = 0;
  uint64_t size = 0;
  RootSource source = RootSource::kStaticData;
  uint32_t thread = 0;
  bool operator==(const RootEntry&) const = default;
};

struct RootSet {
  EventCommon ev;
  uint32_t gcNumber = 0;
  std::vector<RootEntry> roots;
  bool operator==(const RootSet&) const = default;
};

struct CustomEvent {
  EventCommon ev;
  uint32_t nameId = 0;
  std::vector<uint8_t> payload;
  uint32_t stackId = 0;  // the stack that raised it; 0: none (logs before it was recorded too)
  bool operator==(const CustomEvent&) const = default;
};

struct FrameMark {
  EventCommon ev;
  uint64_t frame = 0;
  bool operator==(const FrameMark&) const = default;
};

struct ThreadStart {
  EventCommon ev;
  uint32_t index = 0;
  uint32_t osTid = 0;
  std::string name;
  uint64_t stackLow = 0;
  uint64_t stackHigh = 0;
  bool operator==(const ThreadStart&) const = default;
};

struct ThreadStop {
  EventCommon ev;
  uint32_t index = 0;
  bool operator==(const ThreadStop&) const = default;
};

struct ModuleSegment {
  uint64_t vaddr = 0;
  uint64_t memSize = 0;
  uint32_t flags = 0;
  bool operator==(const ModuleSegment&) const = default;
};

struct ModuleLoad {
  EventCommon ev;
  std::string path;
  uint64_t base = 0;
  uint64_t size = 0;
  std::vector<uint8_t> buildId;
  std::vector<ModuleSegment> segments;
  bool operator==(const ModuleLoad&) const = default;
};

struct ModuleUnload {
  EventCommon ev;
  uint64_t base = 0;
  bool operator==(const ModuleUnload&) const = default;
};

struct JitRange {
  EventCommon ev;
  uint32_t methodId = 0;
  uint64_t codeStart = 0;
  uint64_t codeSize = 0;
  bool operator==(const JitRange&) const = default;
};

struct Lost {
  EventCommon ev;
  uint64_t count = 0;
  uint32_t lostThread = 0;
  std::string reason;
  bool operator==(const Lost&) const = default;
};

// One RAM dump segment (RAM dump chunks). `hasBytes` false: the bytes equal those of an
// earlier segment with the same hash (the reader resolves nothing; replay looks them up).
struct RamSegment {
  SegmentKind kind = SegmentKind::kObject;
  uint32_t gcNumber = 0;
  uint64_t address = 0;
  uint64_t length = 0;
  uint64_t hash = 0;
  bool hasBytes = true;
  std::vector<uint8_t> bytes;
  bool operator==(const RamSegment&) const = default;
};

enum class GcHandleType : uint8_t {
  kWeak = 0,
  kWeakTrackResurrection = 1,
  kNormal = 2,
  kPinned = 3,
  kOther = 4,
};
const char* gcHandleTypeName(GcHandleType t);

struct GcHandle {
  EventCommon ev;
  uint32_t handle = 0;
  GcHandleType type = GcHandleType::kOther;
  uint64_t address = 0;  // the object (creation); 0 on deletion
  bool created = false;
  bool operator==(const GcHandle&) const = default;
};

struct Finalize {
  EventCommon ev;
  uint64_t address = 0;
  bool operator==(const Finalize&) const = default;
};

// Any record of a records chunk. Order of alternatives is stable (used as a kind index).
using Record = std::variant<Alloc, Free, Realloc, StackNode, Collected, LogString, TypeDef,
                            MethodDef, GcBegin, GcEnd, RootRange, RootSet, CustomEvent, FrameMark,
                            ThreadStart, ThreadStop, ModuleLoad, ModuleUnload, JitRange, Lost,
                            GcHandle, Finalize>;
inline constexpr size_t kRecordKindCount = std::variant_size_v<Record>;
// Stable names, used by `heapman info` and its JSON ("alloc", "free", "gc_begin", ...).
const char* recordKindName(size_t kindIndex);

// Header of a log (Cap'n Proto `Header`).
struct Runtime {
  enum class Kind : uint8_t { kNativeMalloc = 0, kBdwgc = 1, kMono = 2 };
  Kind kind = Kind::kNativeMalloc;
  std::string version;
  bool operator==(const Runtime&) const = default;
};
const char* runtimeKindName(Runtime::Kind k);

struct Header {
  std::string recorderVersion;
  uint32_t pid = 0;
  uint32_t parentPid = 0;
  std::string executable;
  std::vector<std::string> commandLine;
  int64_t startWallTimeNs = 0;
  uint64_t startClockNs = 0;
  std::string clock = "monotonic";
  uint8_t pointerSize = sizeof(void*);
  std::vector<Runtime> runtimes;
  std::vector<std::pair<std::string, std::string>> options;
  std::string hostname;
  bool operator==(const Header&) const = default;
};

}  // namespace heapman::log
