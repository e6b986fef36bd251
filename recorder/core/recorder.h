// The recorder inside the recorded process: state shared by the hooks and the writer thread.
//
// Rules: hooks check the thread's reentrancy guard first; nothing on
// the hook path locks, allocates from the hooked heap, hashes, compresses or touches stdio; events
// go to the thread's Ring; the writer thread (writer.h) does everything else.
#pragma once

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../common/contract.h"
#include "ring.h"

#define HEAPMAN_TLS __attribute__((tls_model("initial-exec")))
#define HEAPMAN_EXPORT extern "C" __attribute__((visibility("default")))

namespace heapman::rec {

// Set while this thread runs recorder code (and for the writer thread always): hooks pass
// straight through to the real functions.
extern __thread bool t_guard HEAPMAN_TLS;

struct Guard {
  bool was;
  Guard() : was(t_guard) { t_guard = true; }
  ~Guard() { t_guard = was; }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
};

// The next definition of `name` after the preload module (dlsym RTLD_NEXT), looked up with the
// guard set: dlsym allocates, and an allocation recorded from inside it would start this
// thread's ring, whose set-up calls dlsym again (nested dlsym frees its error buffer twice: the
// "double free" of a program whose first heap call is dlopen).
void* realNext(const char* name);
template <class Fn>
Fn realNextAs(const char* name) {
  return reinterpret_cast<Fn>(realNext(name));
}

// Process-wide state, in static storage, constant-initialized (no global constructors).

// After dlopen/dlclose (hooks): snapshot the module list into this thread's ring, in order with
// its other events.
void recordModules();

struct CodeRange {  // [low, high)
  uintptr_t low, high;
};

struct State {
  std::atomic<bool> active{false};     // hooks record only while set
  std::atomic<uint64_t> seq{0};        // next global sequence number
  // Moved by the writer once a round (every 1 ms while many records come, up to 8 ms apart when
  // few do): an allocation that sees it moved since its thread last read the time stamp
  // counter reads it again (ring.h).
  std::atomic<uint32_t> timeEpoch{0};
  std::atomic<uint32_t> nextThread{0}; // next recorder thread index
  std::atomic<uint64_t> frameNo{0};    // frame marks counted from 1
  std::atomic<Ring*> rings{nullptr};   // every thread's ring, newest first
  std::atomic<uint32_t> wake{0};       // futex word the writer sleeps on
  std::atomic<uint32_t> stop{0};       // set at exit: the writer drains and finishes
  // Futex word: 1 once a fatal signal is killing the process (flushForCrash). The writer then
  // writes out everything committed and finishes the log; meanwhile every other thread's next
  // record waits (waitForWriter), so that nothing new arrives and the writer has the cores.
  std::atomic<uint32_t> crashing{0};
  std::atomic<uint32_t> writerDone{0};     // futex word: 1 once the writer has finished the log
  std::atomic<bool> finishing{false};      // finishRecording() ran (or is running)
  // Hooked dlopen/dlclose calls running, and how many have finished: the writer's rescan of
  // the module list stays out of their way (writer.cpp, rescanModules).
  std::atomic<uint32_t> modulesBusy{0}, modulesGen{0};
  // Futex word: 1 while a collection runs (collectionStarted/Ended). The collector marks on
  // every core it has; the writer steps aside meanwhile, unless a thread waits on a full ring.
  std::atomic<uint32_t> collecting{0};
  std::atomic<uint32_t> ringFull{0};       // a thread waits for room in its ring (begin())
  // The time stamp counter up to which a thread may record without waiting for the writer: the
  // time stamp of the oldest record the writer has not written (or a time before it) plus 50 ms
  // (writer.cpp, publishFront). A thread whose last reading is past
  // it waits (begin(), waitForWriter) until the writer catches up, so that what a SIGKILL loses
  // (all that is not yet written) stays bounded in time whatever the number of threads.
  std::atomic<uint64_t> lagDeadline{UINT64_MAX};
  std::atomic<uint32_t> lagRounds{0};   // futex word: moved (and woken) with lagDeadline
  std::atomic<uint32_t> lagWaiters{0};  // threads asleep on it
  std::atomic<uint64_t> lagWaits{0}, lagWaitNs{0};  // how often and how long (HEAPMAN_STATS)
  std::atomic<uint64_t> fullWaits{0}, fullWaitNs{0};  // how often and how long (HEAPMAN_STATS)
  std::atomic<uint64_t> ringGrowths{0};  // rings doubled (ring.h, Growth; HEAPMAN_STATS)
  int pid = 0;                             // the recorded process (a fork child updates it)
  int parentPid = 0;                       // for a forked child's log header
  pthread_key_t threadKey{};
  pthread_t writer{};
  // Recording is set up in this process (setUpWriter): the log is open and the writer's state
  // made; its thread may not run yet (writerThread).
  bool writerRunning = false;
  std::atomic<uint32_t> writerThread{0};  // 1 while a writer thread runs (writer_thread.cpp)
  std::atomic<uint32_t> pause{0};         // pauseWriter asks the thread to end for a while
  std::atomic<uint64_t> lazySinceNs{0};   // armLazyStart's time: the writer thread is due 50 ms on
  uint32_t depth = 32;                 // frames per stack
  uint64_t ringBytes = 32u << 20;      // per recording thread; faulted in as it fills (writer.cpp)
  uint64_t timeResolutionNs = 10000;   // event times are kept to this (rarer TIME records)
  uint32_t allocTimeEvery = 16;        // an allocation reads the TSC at least every Nth (ring.h)
  // What allocTimeEvery is while a writer thread runs (--alloc-time-every). Without one it is 1:
  // the writer's epoch does not move then, so a thread that paused would otherwise stamp its
  // next allocations with a reading from before the pause.
  uint32_t allocTimeEveryRunning = 16;
  uint64_t tsc0 = 0;                   // time stamp counter and CLOCK_MONOTONIC at start
  uint64_t ns0 = 0;
  int64_t wallNs0 = 0;
  uintptr_t selfLow = 0, selfHigh = 0; // our own code, skipped at the leaf of stacks
  uintptr_t libcLow = 0, libcHigh = 0; // libc's code: where whole frame-pointer chains end
  // How stacks are taken: frame pointers only, frame pointers with a libunwind fallback where the
  // chain is visibly broken, or libunwind always (exact for code without frame pointers).
  enum class Unwind : uint8_t { kFramePointers, kAuto, kDwarf };
  Unwind unwind = Unwind::kAuto;
  // Code ranges of modules built without frame pointers (framelessRanges, modules.h),
  // found when modules are scanned (start-up, after dlopen). With kAuto the walk steps through
  // a frame in one of them by its unwind rule (unwind.h): such a function does not push a
  // frame, so following rbp would miss its caller. Append-only: a slot is written, then published
  // by the release store of framelessCount; readers (any hook) load the count with acquire and
  // read the slots below it, no lock. framelessLow/High bound them all (a cheap first test; they
  // only widen, and are stored before the count). Writers take framelessLock (off the event
  // path; a fork child clears it). A module unloaded keeps its slot: at worst a later module
  // there is unwound with libunwind needlessly. Full: further modules are not recorded.
  // framelessEh[k]: the .eh_frame_hdr of frameless[k]'s module (unwind.h reads its rules), 0
  // once the module is unloaded (its frames then go to libunwind).
  static constexpr uint32_t kMaxFrameless = 64;
  CodeRange frameless[kMaxFrameless] = {};
  std::atomic<uintptr_t> framelessEh[kMaxFrameless] = {};
  std::atomic<uint32_t> framelessCount{0};
  std::atomic<uintptr_t> framelessLow{UINTPTR_MAX}, framelessHigh{0};
  std::atomic<bool> framelessLock{false};
  // Return addresses where a thread's code begins (inside __libc_start_call_main after its call
  // of main, inside start_thread after its call of the thread's function): a walk stops there,
  // as the frame-pointer walk always did, instead of stepping through libc's start code to
  // _start or clone3 (two more frames on every stack for nothing). Learnt from the first walks
  // that reach the end of the start code (captureStack); slots filled by compare-exchange, never
  // emptied. entryCount is part of a walk's constants (StackMemo::frameless).
  static constexpr uint32_t kMaxEntries = 8;
  std::atomic<uintptr_t> entryRets[kMaxEntries] = {};
  std::atomic<uint32_t> entryCount{0};
  // Stacks that --unwind auto handed to libunwind, and return addresses whose unwind rule was
  // not cached yet (unwind.h): rare events, counted for HEAPMAN_STATS.
  std::atomic<uint64_t> unwindFallbacks{0}, ruleMisses{0};
  char output[4096] = {};               // this process's log (core/log_fd.h has its fd)
  // The log heaprec was asked for: the process heaprec started writes it; every other process
  // (a fork child, a program executed with --follow-exec) writes BASE.PID or BASE.PID.exec.
  char base[4096] = {};
  // A FIFO heaprec reads (HEAPMAN_MESSAGES): where say() writes, so that the recorder never
  // writes into the program's own streams. Empty: stderr, and only from the first process.
  char messages[4096] = {};
  bool root = true;                    // the process heaprec started (not a fork or exec child)
  // --follow-exec: programs any recorded process executes are recorded too. Wrapper (heaprec's
  // choice for a script): only the programs the first process becomes by exec (a wrapper
  // script's `exec mono ...`); its forks and what they run are not recorded.
  enum class Follow : uint8_t { kNone, kAll, kWrapper };
  Follow follow = Follow::kNone;
  // --ram-dumps as heaprec passed it (HEAPMAN_RAM_DUMPS; empty: off) and parsed (contract.h):
  // the collector layers take dumps by it, the log header names it.
  char ramDumpsText[8 + env::kMaxEventName] = {};
  env::RamDumps ramDumps;
  char bdwgcVersion[32] = {};          // set when the program runs on libgc (hooks/bdwgc/init.cpp)
  char monoVersion[64] = {};           // set when the program is Mono (hooks/mono/init.cpp)
  int8_t gcInteriorPointers = -1;      // libgc's GC_all_interior_pointers at start; -1: unknown
  bool recordNative = true;            // glibc malloc family (off in Mono unless asked for)
  // Used blocks the writer hands back to the collector layer: two of each kept, so that a
  // collection that comes while the writer still holds the last block takes the one before it,
  // its pages faulted in already, instead of faulting new pages in under the collector's lock.
  struct SpareBlocks {
    std::atomic<void*> slot[2] = {};
    void* take() {
      for (auto& s : slot)
        if (void* p = s.exchange(nullptr, std::memory_order_acquire)) return p;
      return nullptr;
    }
    // Kept for a later take(), or unmapped when two are kept already.
    template <class Block>
    void give(Block* block) {
      for (auto& s : slot)
        if (void* none = nullptr; s.compare_exchange_strong(none, block, std::memory_order_acq_rel))
          return;
      munmap(block, block->mapLength);
    }
  };
  SpareBlocks spareDump;   // RamDump blocks for the next dumps (gc_events.h)
  SpareBlocks spareMarks;  // MarkSnapshot blocks for the next collections
  std::atomic<uint64_t> gcDebugOffset{0}; // GC_debug_* objects: recorded address - object start
};
extern State g;

// The calling thread's ring, created on first use; null when this thread does not record.
extern __thread Ring* t_ring HEAPMAN_TLS;
Ring* newThreadRing();  // the slow path: registers the thread's ring
inline Ring* threadRing() { return t_ring ? t_ring : newThreadRing(); }

// Two-phase emit. begin() reserves room in the ring, marks the thread busy and takes the
// sequence number (an allocation only reads it: ring.h); the caller fills the record and calls
// commit(). Between them the thread must
// not block on anything the writer thread waits for. begin() returns null (event dropped and
// counted as lost) when the ring stays full for too long.
RawEvent* begin(Ring* r, Kind kind, uint32_t nframes, uint32_t extraLen);
inline void commit(Ring* r, RawEvent* e) {
  uint64_t head = r->head.load(std::memory_order_relaxed);
  const uint64_t mask = r->capacity - 1;
  // begin() may have padded to the end of the buffer: the record is where e is.
  uint64_t at = static_cast<uint64_t>(reinterpret_cast<uint8_t*>(e) - r->data);
  if ((head & mask) != at) head += r->capacity - (head & mask);
  r->head.store(head + e->size, std::memory_order_release);
  r->nextSeq.store(e->seq + e->seqs, std::memory_order_release);
  r->busy.store(0, std::memory_order_release);
}

// Return addresses of the caller's stack, leaf first, skipping the recorder's own frames.
// Frame-pointer walk, bounded by the thread's stack (never faults), that steps through frames
// of frameless modules (g.frameless) by their unwind rules (unwind.h, --unwind auto); where
// neither can go on before the outermost frame (a rule it does not follow, code without frame
// pointers outside those modules), libunwind (DWARF) instead.
// `from`: a frame of the caller's to start at (its return address is the first frame), so that
// the walk does not pass the hook's own frames; null: here.
// `memo`: receives what the walk read, for a later replay (ring.h, StackMemo); count 0 when it
// cannot be replayed.
// `prev`, `prevFrames`, `prevCount`: an earlier walk of this thread (its memo, count > 0) and
// the frames it took. Where this walk reaches a state that walk was in (same stack pointer,
// frame pointer and return address) and every word that walk read after it is unchanged, the
// rest of the stack is that walk's rest: copied, not walked (stacks often share their outer
// frames).
uint32_t captureStack(uint64_t* out, uint32_t max, const void* from = nullptr,
                      StackMemo* memo = nullptr, const StackMemo* prev = nullptr,
                      const uint64_t* prevFrames = nullptr, uint32_t prevCount = 0);

// Classifies every loaded module as keeping frame pointers or not (framelessRanges) and adds the
// code ranges of those that do not to g.frameless, once each. At start-up and after
// dlopen/dlclose, never per event; for --unwind auto only.
void classifyModules();

// begin() for an event that carries the calling thread's stack (captured here, leaf first, the
// recorder's frames skipped) through the ring's stack cache (ring.h, kSameStack), and extraLen
// bytes after it; null when the thread does not record or the event was dropped. `r` receives
// the thread's ring.
RawEvent* beginWithStack(Ring*& r, Kind kind, uint8_t heap, uint32_t extraLen = 0,
                         const void* from = nullptr);
// The same with frames the caller took (leaf first; `framesFlag`: kManagedFrames or 0). Managed
// method handles and return addresses never coincide, so both kinds share the cache.
RawEvent* beginWithFrames(Ring* r, Kind kind, uint8_t heap, const uint64_t* frames, uint32_t n,
                          uint32_t extraLen, uint16_t framesFlag);
// The same for a caller that knows its stack is the one the ring keeps in `slot`: it read that
// slot from an earlier event's flags (stackSlotOf), and Ring::slotChanges has not moved since.
inline RawEvent* beginWithSlot(Ring* r, Kind kind, uint8_t heap, uint32_t slot,
                               uint32_t extraLen, uint16_t framesFlag) {
  RawEvent* e = begin(r, kind, 0, extraLen);
  if (!e) return nullptr;
  r->lastSlot = static_cast<uint8_t>(slot);
  e->heap = heap;
  e->flags = static_cast<uint16_t>(kSameStack | (slot << kStackSlotShift) | framesFlag);
  return e;
}

// An allocation's time stamp counter reading (ring.h, "Time"): the thread's last one, or a new
// one every State::allocTimeEvery allocations and whenever the writer's epoch moved.
inline uint64_t allocationTsc(Ring* r) {
  uint32_t epoch = g.timeEpoch.load(std::memory_order_relaxed);
  if (r->tscLeft == 0 || r->tscEpoch != epoch) {
    r->lastTsc = __builtin_ia32_rdtsc();
    r->tscLeft = g.allocTimeEvery - 1;
    r->tscEpoch = epoch;
  } else {
    --r->tscLeft;
  }
  return r->lastTsc;
}

// beginWithSlot() for an allocation, inline: the commonest event there is (a managed allocation
// in a method that made one before). What begin() does, with the record's shape known: a header
// record (no frames, no bytes) that fits before the end of the buffer, in a ring with room for it
// by the producer's copy of the tail, that does not cross the half-full mark (where the writer is
// woken), and no drop to report; anything else goes through begin(). Two stores write the first
// 16 bytes instead of seven.
__attribute__((always_inline)) inline RawEvent* beginAllocationWithSlot(Ring* r, uint8_t heap,
                                                                  uint32_t slot,
                                                                  uint16_t framesFlag) {
  constexpr uint64_t kSize = sizeof(RawEvent);
  const uint64_t head = r->head.load(std::memory_order_relaxed);
  const uint64_t capacity = r->capacity, at = head & (capacity - 1);
  const uint64_t fill = head - r->cachedTail;
  // at - 1 < capacity - kSize: fits before the end, and not at offset 0, where the ring may grow
  // (ring.h, Growth; begin() does that).
  const bool simple = r->lostPending == 0 && at - 1 < capacity - kSize && fill + kSize <= capacity &&
                      (fill > capacity / 2 || fill + kSize <= capacity / 2) &&
                      r->lastTsc <= g.lagDeadline.load(std::memory_order_relaxed);
  if (__builtin_expect(!simple, 0))
    return beginWithSlot(r, Kind::kAlloc, heap, slot, 0, framesFlag);
  r->busy.store(1, std::memory_order_relaxed);  // as in begin()
  const uint64_t seq = g.seq.load(std::memory_order_acquire);
  const uint64_t tsc = allocationTsc(r);
  auto* e = reinterpret_cast<RawEvent*>(r->data + at);
  __asm__ volatile("prefetchw %0" ::"m"(*(r->data + ((head + 512) & (capacity - 1)))));  // begin()
  const auto flags = static_cast<uint16_t>(kSameStack | (slot << kStackSlotShift) | framesFlag);
  // size, kind, heap, flags; then nframes, seqs and extraLen, all 0.
  const uint64_t word0 = kSize | uint64_t{static_cast<uint8_t>(Kind::kAlloc)} << 32 |
                         uint64_t{heap} << 40 | uint64_t{flags} << 48;
  std::memcpy(e, &word0, 8);
  std::memset(reinterpret_cast<uint8_t*>(e) + 8, 0, 8);
  e->seq = seq;
  e->tsc = tsc;
  r->lastSlot = static_cast<uint8_t>(slot);
  return e;  // the caller sets a, b, c and extra
}
static_assert(offsetof(RawEvent, kind) == 4 && offsetof(RawEvent, heap) == 5 &&
              offsetof(RawEvent, flags) == 6 && offsetof(RawEvent, seq) == 16);

inline uint64_t* framesOf(RawEvent* e) { return reinterpret_cast<uint64_t*>(e + 1); }
inline uint8_t* extraOf(RawEvent* e) {
  return reinterpret_cast<uint8_t*>(e + 1) + e->nframes * sizeof(uint64_t);
}

void wakeWriter();
// The collector layers call these at a collection's start and end (State::collecting).
void collectionStarted();
void collectionEnded();

// CLOCK_MONOTONIC in ns.
inline uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// One line, "heaprec: " then the printf-formatted text, without stdio (it may be in any state)
// and without allocating: to heaprec's message FIFO (State::messages), which heaprec prints
// when the program has exited; without one, on stderr from the first process only (a fork or
// exec child never writes into the program's streams). A process other than the first names
// its pid.
void say(const char* format, ...) __attribute__((format(printf, 1, 2)));

// The writer thread starts lazily (writer_thread.cpp): a short single-threaded program never has a
// second thread (unshare(CLONE_NEWUSER) refuses a multi-threaded process; some programs count
// their threads in /proc/self/task). It starts at the first record made kLazyStartNs after
// recording began (State::lagDeadline sends that record to waitForWriter), when a second thread
// starts recording, when a ring passes half full, when the log must be finished (exit, exec, a
// fatal signal), never during a collection (the world may be stopped with a thread inside the
// allocator). Until then the records wait in the rings: a single-threaded program killed by
// SIGKILL before its first record after kLazyStartNs loses them.
inline constexpr uint64_t kLazyStartNs = 50'000'000;
// Sets up recording without a thread (start-up, a fork child): the modules loaded now, the lazy
// start armed. True on success.
bool setUpWriter();
// Starts the writer thread unless it runs (or is being started or stopped by another thread).
void startWriterThread();
// Before a call that needs the process single-threaded (unshare, setns): the writer thread
// writes out what it can and ends; the next one starts lazily again, kLazyStartNs later. True
// when a writer thread was running and has ended.
bool pauseWriter();
// Calls `call` (unshare, setns) after pauseWriter. pthread_join returns once the writer thread
// cleared its tid, which the kernel does before it takes the thread out of the thread group:
// for a moment the process still counts two threads, and the call fails with EINVAL. Then the
// call is made again, every 200 us for up to 100 ms (a failed call changes nothing); an EINVAL
// with the writer long gone is the program's own.
int callSingleThreaded(int (*call)(int, int), int a, int b);
// Starts the writer thread if it never ran, lets it finish the log and joins it (exit, exec).
void stopWriter();
// The writer thread is due kLazyStartNs from now (writer_thread.cpp).
void armLazyStart();
// The lazy start's test, from a record past State::lagDeadline or a ring past half full
// (`now`): starts the writer thread when it is due (writer_thread.cpp).
void needWriter(bool now);

// Start-up (lifecycle.cpp): reads heaprec's environment (contract.h), opens this process's log,
// starts the clock and the thread registry. False when the process is not to be recorded (no
// heaprec, or the log cannot be written: said). Recording is on once the caller sets g.active.
bool startRecording();

// Stops recording and finishes the log (footer included). Idempotent; does nothing in a vfork
// child (it shares the parent's memory). For exit, _exit and exec.
void finishRecording();
// From a fatal-signal handler before the process dies: the writer writes out every record
// committed so far (what it cannot, it counts in a Lost record) and finishes the log, while the
// other threads wait at their next record. Waits at most ~3 s (the writer may itself be stuck
// behind a lock the dying thread holds). `sig`: the signal being handled. Where the writer
// thread has not started yet, it is started from here (pthread_create, which is not
// async-signal-safe), so `sig`'s default action is restored first and a timer sends it to this
// thread again in 3 s, ending the process should that hang.
void flushForCrash(int sig);

// A thread's stack [low, high) from pthread_getattr_np (which allocates, and for the main thread
// reads /proc/self/maps: not for the hot path). False when it cannot tell.
bool threadStackBounds(pthread_t thread, uint64_t& low, uint64_t& high);
// The bounds each recording thread found as it registered (newThreadRing), for threads other
// than the caller: read without a lock or an allocation (safe while a collector has the world
// stopped). False if the thread never registered or its entry was overwritten (after 4 096 newer
// threads). A pthread_t reused by a later thread names the same stack block (glibc keeps the
// descriptor at its top); the newest entry wins.
bool knownThreadStack(pthread_t thread, uint64_t& low, uint64_t& high);

// Removes from the environment variable `name` the items (separated by any of `separators`) for
// which drop(item, length, context) is true, joining the rest with `joiner`; unsets it if none
// is left. Without allocating from the hooked heap (a stack buffer; setenv copies).
void removeEnvItems(const char* name, const char* separators, char joiner,
                    bool (*drop)(const char* item, size_t len, const void* context), const void* context);

// Takes heaprec's --profile=heapman out of MONO_ENV_OPTIONS: for the programs this one runs,
// when they are not to be recorded (a Mono they start would look for the profiler in vain).
void removeMonoProfileOption();

// An alternate signal stack for the calling thread, where it has none (a stack overflow's
// SIGSEGV needs one to reach the crash handler); its memory, or null. removeAltStack: at the
// thread's exit.
void* installAltStack();
void removeAltStack(void* mem);

}  // namespace heapman::rec
