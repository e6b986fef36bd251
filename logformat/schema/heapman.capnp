# HeapMan transaction log: the Cap'n Proto parts of the format.
#
# The byte layout around these messages (prefix, chunks, hot records, trailer) is in
# logformat/include/heapman/logformat/format.h and docs/DESIGN.md. This file holds:
#   - Header: the message after the fixed prefix;
#   - Index: the footer chunk's message;
#   - the bodies of EXTENDED records (one struct per ExtKind).
# Evolution rules (Cap'n Proto's): add fields with new ordinals only; never renumber or retype.
# Every message is written packed (capnp::writePackedMessage).

@0xe520b7efacdb045a;

$import "/capnp/c++.capnp".namespace("heapman::log::schema");

# ---------------------------------------------------------------------------------------------
# Header

enum RuntimeKind {
  nativeMalloc @0;   # glibc malloc family hooked
  bdwgc @1;          # Boehm-Demers-Weiser collector (libgc.so.1)
  mono @2;           # Mono runtime (mono-boehm) through its profiler API
}

struct Runtime {
  kind @0 :RuntimeKind;
  version @1 :Text;
}

struct KeyValue {
  key @0 :Text;
  value @1 :Text;
}

struct Header {
  recorderVersion @0 :Text;       # release version of the recorder that wrote the log
  pid @1 :UInt32;
  parentPid @2 :UInt32;           # for a log of a forked child: the parent's pid, else 0
  executable @3 :Text;            # /proc/self/exe at start
  commandLine @4 :List(Text);
  startWallTimeNs @5 :Int64;      # CLOCK_REALTIME at start, ns since the Unix epoch
  startClockNs @6 :UInt64;        # the clock below at start; record times are ns after it
  clock @7 :Text;                 # "monotonic" (CLOCK_MONOTONIC)
  pointerSize @8 :UInt8;          # bytes per pointer in the recorded process
  runtimes @9 :List(Runtime);     # runtimes present when recording started
  options @10 :List(KeyValue);    # recorder options in effect (stack depth, heaps, dump policy)
  hostname @11 :Text;
}

# ---------------------------------------------------------------------------------------------
# Footer index: written last, followed by the 16-byte trailer that points to it.

struct ChunkEntry {
  offset @0 :UInt64;              # file offset of the chunk header
  type @1 :UInt16;
  firstSeq @2 :UInt64;
  lastSeq @3 :UInt64;             # last sequence number used in the chunk (firstSeq - 1 if none)
  recordCount @4 :UInt32;
  gcNumbers @5 :List(UInt32);     # GCs that begin, end or report collected objects in the chunk
  eventNameIds @6 :List(UInt32);  # LogString ids of custom events in the chunk
  firstTimeNs @7 :UInt64;
  lastTimeNs @8 :UInt64;
  # Format minor 2, when Index.codeMarked: the chunk holds a record that frame names depend on
  # (ModuleLoad, JitRange, MethodDef), so that a reader can take in the whole log's code before
  # it reads the records up to a point.
  namesCode @9 :Bool;
}

struct Index {
  complete @0 :Bool;              # true: the recorder closed the log normally
  chunks @1 :List(ChunkEntry);    # every chunk before the index, in file order
  endSeq @2 :UInt64;              # one past the last sequence number written
  endTimeNs @3 :UInt64;
  recordCount @4 :UInt64;
  lostEvents @5 :UInt64;          # sum of Lost.count
  eventCount @6 :UInt64;          # event records written (those with sequence numbers)
  codeMarked @7 :Bool;            # format minor 2: every ChunkEntry's namesCode is set exactly
                                  # (false: older logs, unknown, read every chunk to know)
}

# ---------------------------------------------------------------------------------------------
# EXTENDED record bodies. Definitions carry ids; events get sequence number, time and thread
# from the record stream around them.

# ExtKind 1 (definition): an interned string (event names, thread names, labels).
struct LogString {
  id @0 :UInt32;
  text @1 :Text;
}

# ExtKind 2 (definition): a type that allocations name by typeId.
struct TypeDef {
  id @0 :UInt32;
  name @1 :Text;                  # e.g. System.Collections.Generic.List<Game.Enemy>
  instanceSize @2 :UInt64;        # 0 when unknown or variable
  descriptor @3 :UInt64;          # runtime handle (MonoClass*, gcj vtable, GC descriptor)
  # Where its objects hold references, as the runtime lays them out (format minor 1). The heap
  # graph scans these words only; `unknown` (older logs, layouts too big to list) is scanned
  # conservatively, every aligned word.
  layout @4 :TypeLayout;
  refOffsets @5 :List(UInt32);    # fields: byte offsets from the object's start;
                                  # array: byte offsets within one element
  elementSize @6 :UInt32;         # array: bytes per element
  dataOffset @7 :UInt32;          # array: the first element's offset from the object's start
}

enum TypeLayout {
  unknown @0;
  pointerFree @1;                 # no references (strings, primitive arrays, plain data)
  fields @2;                      # references exactly at refOffsets
  array @3;                       # elements from dataOffset, each with references at refOffsets
}

# ExtKind 3 (definition): a managed method that managed stack frames name.
struct MethodDef {
  id @0 :UInt32;
  name @1 :Text;                  # full name, e.g. Game.Level:Spawn (int)
  handle @2 :UInt64;              # MonoMethod* in the recorded process
}

# ExtKind 4 (event)
struct GcBegin {
  gcNumber @0 :UInt32;
  heapSize @1 :UInt64;            # bytes of heap the collector manages at begin
  generation @2 :Int32;           # -1 when the collector has no generations
}

# ExtKind 5 (event)
struct GcEnd {
  gcNumber @0 :UInt32;
  heapSize @1 :UInt64;
  freeBytes @2 :UInt64;           # free bytes in the heap after the collection
  pauseNs @3 :UInt64;             # world-stopped time the recorder measured
}

enum RootSource {
  staticData @0;                  # a module's data/bss seen by the collector
  registered @1;                  # GC_add_roots / mono_gc_register_root
  threadStack @2;
  monoStatic @3;
  monoThreadStatic @4;
  monoDomain @5;
  monoHandle @6;
  monoStack @7;
  other @8;
  markProcedure @9;               # pushed by a program's mark procedure from outside the heap
  pushedRange @10;                # a range the program pushed (GC_push_all and relatives)
  finalizeQueue @11;              # objects queued for their finalizer (a table of addresses)
}

# ExtKind 6 (event): a root range registered or removed.
struct RootRange {
  added @0 :Bool;
  address @1 :UInt64;
  size @2 :UInt64;
  source @3 :RootSource;
  label @4 :Text;
}

struct RootEntry {
  address @0 :UInt64;
  size @1 :UInt64;
  source @2 :RootSource;
  thread @3 :UInt32;              # thread index for thread stacks
}

# ExtKind 7 (event): the root ranges the collector scanned in one GC.
struct RootSet {
  gcNumber @0 :UInt32;
  roots @1 :List(RootEntry);
}

# ExtKind 8 (event): a custom game event (heapman_event / HeapMan.Event).
struct CustomEvent {
  nameId @0 :UInt32;              # LogString id
  payload @1 :Data;
  stackId @2 :UInt32;             # the stack that raised it (native or managed); 0: none
}

# ExtKind 9 (event): a frame mark.
struct FrameMark {
  frame @0 :UInt64;               # frame number, counted by the recorder from 1
}

# ExtKind 10 (event)
struct ThreadStart {
  index @0 :UInt32;               # recorder-assigned thread index, used by THREAD records
  osTid @1 :UInt32;
  name @2 :Text;
  stackLow @3 :UInt64;
  stackHigh @4 :UInt64;
}

# ExtKind 11 (event)
struct ThreadStop {
  index @0 :UInt32;
}

struct ModuleSegment {
  vaddr @0 :UInt64;               # p_vaddr of a PT_LOAD segment
  memSize @1 :UInt64;
  flags @2 :UInt32;               # p_flags
}

# ExtKind 12 (event): a module mapped (at start, and on every dlopen).
struct ModuleLoad {
  path @0 :Text;
  base @1 :UInt64;                # load bias (dlpi_addr)
  size @2 :UInt64;                # bytes from the lowest to the highest mapped segment
  buildId @3 :Data;               # NT_GNU_BUILD_ID, empty if none
  segments @4 :List(ModuleSegment);
}

# ExtKind 13 (event)
struct ModuleUnload {
  base @0 :UInt64;
}

# ExtKind 14 (event): JIT-compiled code of a managed method.
struct JitRange {
  methodId @0 :UInt32;            # MethodDef id
  codeStart @1 :UInt64;
  codeSize @2 :UInt64;
}

# ExtKind 15 (event): events the recorder had to drop.
struct Lost {
  count @0 :UInt64;
  thread @1 :UInt32;
  reason @2 :Text;
}

enum GcHandleType {
  weak @0;                        # cleared when the object becomes unreachable
  weakTrackResurrection @1;       # cleared when the collector frees it (after finalization)
  normal @2;                      # a strong root
  pinned @3;
  other @4;
}

# ExtKind 16 (event): a GC handle created or deleted (Mono: GCHandle.Alloc/Free, WeakReference,
# the runtime's own handles).
struct GcHandle {
  handle @0 :UInt32;
  type @1 :GcHandleType;
  address @2 :UInt64;             # the object it names (creation); 0 on deletion
  created @3 :Bool;
}

# ExtKind 17 (event): the collector found an object with a finalizer unreachable and its finalizer
# is about to run (Mono's gc_finalizing_object); the object is freed by a later collection.
struct Finalize {
  address @0 :UInt64;
}
