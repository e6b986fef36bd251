// Each ring event as log records (writer.h, Writer::convert): allocations and frees with their
// interned stacks, custom events, threads, modules, collections with the objects they freed
// (the tracked set swept against the collector's marks), root sets, RAM dumps cut into pages,
// and Mono's classes and methods.

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "writer.h"

namespace heapman::rec::writer {

namespace {
// Object segments of a RAM dump are cut at these address boundaries (see Kind::kRamDump).
constexpr uint64_t kDumpPage = 4096;
}  // namespace

void Writer::convert(Ring* r, RawEvent* e) {
  if (!log_->ok()) return;
  // The log's sequence numbers: one per record that has one, in the order written.
  const uint64_t timeNs = timeOf(e->tsc);
  auto ev = [&] { return EventCommon{nextSeq_++, timeNs, r->index}; };
  auto stack = [&]() __attribute__((always_inline)) -> uint32_t {
    uint32_t& slot = r->writerSlotStack[stackSlotOf(e->flags)];
    if (!(e->flags & kSameStack))
      slot = e->flags & kManagedFrames ? managedStack(e)
                                       : stacks_.intern(framesOf(e), e->nframes, *log_);
    return slot;
  };
  auto heap = static_cast<HeapKind>(e->heap & 7);
  switch (e->kind) {
    case Kind::kAlloc:
      // Not through an Alloc: see LogWriter::writeAlloc.
      log_->writeAlloc(ev(), e->a,
                       AllocInfo{heap, e->b, e->c, stack(), e->extra ? typeId(e->extra) : 0});
      if (tracked(heap)) tracked_.add(trackedKey(e));
      break;
    case Kind::kFree:
      stack();
      log_->write(Free{ev(), heap, e->a});
      if (tracked(heap)) tracked_.noteFree(trackedKey(e));
      break;
    case Kind::kRealloc:
      log_->write(Realloc{ev(), heap, e->a, e->extra, e->b, e->c, stack(), 0});
      break;
    case Kind::kEvent: {
      uint32_t stackId = stack();
      std::string name(reinterpret_cast<const char*>(extraOf(e)), e->a);
      auto [it, fresh] = names_.emplace(name, static_cast<uint32_t>(names_.size() + 1));
      if (fresh) log_->write(LogString{it->second, name});
      const uint8_t* payload = extraOf(e) + e->a;
      log_->write(CustomEvent{ev(), it->second, std::vector<uint8_t>(payload, payload + e->b),
                              stackId});
      break;
    }
    case Kind::kFrame:
      log_->write(FrameMark{ev(), e->a});
      break;
    case Kind::kThreadStart: {
      std::string comm = readFile(("/proc/self/task/" + std::to_string(e->a) + "/comm").c_str());
      while (!comm.empty() && comm.back() == '\n') comm.pop_back();
      log_->write(ThreadStart{ev(), r->index, static_cast<uint32_t>(e->a), comm, e->b, e->c});
      break;
    }
    case Kind::kThreadStop:
      log_->write(ThreadStop{ev(), r->index});
      break;
    case Kind::kLost:
      log_->write(Lost{ev(), e->a, r->index, "the thread's ring stayed full"});
      break;
    case Kind::kModules:
      applyModules(deserializeModules(extraOf(e), e->extraLen), timeNs);
      break;
    case Kind::kGcBegin:
      log_->write(GcBegin{ev(), static_cast<uint32_t>(e->a), e->b, -1});
      break;
    case Kind::kGcEnd:
      log_->write(GcEnd{ev(), static_cast<uint32_t>(e->a), e->b, e->c, e->extra});
      break;
    case Kind::kMarks: {
      // The tracked objects the collector did not mark. No sequence number of its own in the
      // log: the Collected record takes effect at its GC's GcEnd.
      auto* snap = reinterpret_cast<MarkSnapshot*>(e->a);
      std::vector<uint64_t> collected;
      tracked_.sweep(*snap, g.gcDebugOffset.load(std::memory_order_relaxed), collected);
      log_->write(Collected{static_cast<uint32_t>(e->b), std::move(collected)});
      g.spareMarks.give(snap);
      break;
    }
    case Kind::kRootRange:
      log_->write(RootRange{ev(), e->c != 0, e->a, e->b, static_cast<RootSource>(e->heap),
                            std::string(reinterpret_cast<const char*>(extraOf(e)), e->extraLen)});
      break;
    case Kind::kRootSet: {
      RootSet rs{ev(), static_cast<uint32_t>(e->a), {}};
      const auto* entries = reinterpret_cast<const RootSetEntry*>(extraOf(e));
      for (uint32_t i = 0; i < e->extraLen / sizeof(RootSetEntry); ++i)
        rs.roots.push_back({entries[i].address, entries[i].size,
                            static_cast<RootSource>(entries[i].source), entries[i].thread});
      log_->write(rs);
      break;
    }
    case Kind::kRamDump: {
      auto* d = reinterpret_cast<RamDump*>(e->a);
      // The objects' bytes are back to back in list order. Runs of adjacent objects are
      // written cut at 4 KiB address boundaries, not one segment per object: a page whose
      // live objects did not change since an earlier dump has the same bytes, so it costs a
      // reference of ~14 bytes, where per-object segments cost that per object (guile's
      // 16-byte pairs: a log 178x larger than without dumps).
      // The runs are written in address order, whatever order the collector's block walk
      // listed them in (bdwgc's walks each 4 MiB of blocks downwards): a reader then finds
      // the bytes of the objects in the order it scans them, one sequential read (10 M
      // objects: every run out of order before).
      uint64_t at = d->objectBytesOffset;
      std::vector<DumpRun>& runs = dumpRuns_;
      runs.clear();
      for (uint32_t i = 0; i < d->objectCount; ++i) {
        const RamDump::Object& o = d->objects()[i];
        if (!runs.empty() && o.address == runs.back().address + runs.back().length) {
          runs.back().length += o.size;
          ++runs.back().count;
        } else {
          runs.push_back({o.address, o.size, at, i, 1});
        }
        at += o.size;
      }
      auto byAddress = [](const DumpRun& x, const DumpRun& y) { return x.address < y.address; };
      if (!std::is_sorted(runs.begin(), runs.end(), byAddress))
        std::sort(runs.begin(), runs.end(), byAddress);
      for (const DumpRun& run : runs)
        for (uint64_t off = 0; off < run.length;) {
          uint64_t address = run.address + off;
          uint64_t n = std::min(run.length - off, kDumpPage - address % kDumpPage);
          log_->writeRam(SegmentKind::kObject, d->gcNumber, address,
                         {d->base() + run.at + off, static_cast<size_t>(n)});
          off += n;
        }
      writeObjectLists(*d);
      for (uint32_t i = 0; i < d->rangeCount; ++i) {
        const RamDump::Range& rg = d->ranges()[i];
        log_->writeRam(static_cast<SegmentKind>(rg.kind), d->gcNumber, rg.address,
                       {d->base() + rg.offset, static_cast<size_t>(rg.length)});
      }
      ramDumps_.count++;
      ramDumps_.copyNs += d->copyNs;
      ramDumps_.bytes += d->copyBytes;
      g.spareDump.give(d);
      break;
    }
    case Kind::kTypeDef:
      if (uint32_t id = types_.add(e->a)) log_->write(typeDef(id, e));
      break;
    case Kind::kMethodDef: {
      uint32_t id = methods_.add(e->a);
      if (id)
        log_->write(MethodDef{id, std::string(reinterpret_cast<const char*>(extraOf(e)), e->extraLen),
                              e->a});
      else
        id = methods_.find(e->a);
      if (e->c) log_->write(JitRange{ev(), id, e->b, e->c});
      break;
    }
    case Kind::kGcHandle:
      log_->write(GcHandle{ev(), static_cast<uint32_t>(e->a), static_cast<GcHandleType>(e->heap),
                           e->b, e->c != 0});
      break;
    case Kind::kFinalize:
      log_->write(Finalize{ev(), e->a});
      break;
    case Kind::kNop:  // a failed realloc: no record, but its frames fill a stack slot
      stack();
      break;
    case Kind::kPad:
      break;
  }
}

void Writer::writeObjectLists(const RamDump& d) {
  ByteBuffer& list = objectList_;
  list.clear();
  uint64_t page = 0, previous = 0;
  auto flush = [&] {
    if (!list.empty())
      log_->writeRam(SegmentKind::kObjectList, d.gcNumber, page, {list.data(), list.size()});
    list.clear();
  };
  // In the order of the runs just written (address order): readers then read the objects
  // in order and need not sort them.
  for (const DumpRun& run : dumpRuns_)
    for (uint32_t i = run.first; i < run.first + run.count; ++i) {
      const RamDump::Object& o = d.objects()[i];
      uint64_t p = o.address & ~(kDumpPage - 1);
      if (list.empty() || p != page || o.address < previous) {
        flush();
        page = p, previous = p;
      }
      list.putVarint(o.address - previous);
      list.putVarint(o.size);
      previous = o.address;
    }
  flush();
}

TypeDef Writer::typeDef(uint32_t id, RawEvent* e) {
  const auto* extra = reinterpret_cast<const char*>(extraOf(e));
  uint32_t nameLen = std::min<uint32_t>(static_cast<uint32_t>(e->c & 0xffff), e->extraLen);
  TypeDef t{id, std::string(extra, nameLen), e->b, e->a};
  auto layout = static_cast<uint8_t>(e->c >> 16);
  if (layout <= static_cast<uint8_t>(TypeLayout::kArray)) {
    t.layout = static_cast<TypeLayout>(layout);
    t.refOffsets.resize((e->extraLen - nameLen) / sizeof(uint32_t));
    std::memcpy(t.refOffsets.data(), extra + nameLen, t.refOffsets.size() * sizeof(uint32_t));
    if (t.layout == TypeLayout::kArray) {
      t.dataOffset = static_cast<uint8_t>(e->c >> 24);
      t.elementSize = static_cast<uint32_t>(e->c >> 32);
    }
  }
  return t;
}

uint32_t Writer::typeId(uint64_t handle) {
  if (uint32_t id = types_.find(handle)) return id;
  uint32_t id = types_.add(handle);
  char name[48];
  std::snprintf(name, sizeof name, "(class 0x%llx)", static_cast<unsigned long long>(handle));
  log_->write(TypeDef{id, name, 0, handle});
  return id;
}

uint32_t Writer::methodId(uint64_t handle) {
  if (uint32_t id = methods_.find(handle)) return id;
  uint32_t id = methods_.add(handle);
  char name[48];
  std::snprintf(name, sizeof name, "(method 0x%llx)", static_cast<unsigned long long>(handle));
  log_->write(MethodDef{id, name, handle});
  return id;
}

uint32_t Writer::internManaged(const uint64_t* in, uint32_t n) {
  uint64_t frames[kMaxFrames];
  for (uint32_t i = 0; i < n; ++i) frames[i] = methodId(in[i]) | kManagedFrame;
  return stacks_.intern(frames, n, *log_);
}

uint32_t Writer::managedStack(RawEvent* e) {
  const uint64_t* in = framesOf(e);
  const uint32_t n = e->nframes;
  ManagedCacheEntry* cached = nullptr;
  uint64_t hash = 0;
  if (n > 0 && n <= kManagedCacheFrames) {
    if (managedMisses_ >= managedGrowAt_ && managedSlots_ < kManagedCacheSlots) {
      const uint32_t slots = managedSlots_ ? 4 * managedSlots_ : kManagedCacheFirst;
      if (auto* bigger =
              static_cast<ManagedCacheEntry*>(calloc(slots, sizeof(ManagedCacheEntry)))) {
        managedCache_.reset(bigger);
        managedSlots_ = slots;
      }
      managedGrowAt_ = managedMisses_ + 2 * uint64_t{slots};
    }
    if (!managedCache_) return ++managedMisses_, internManaged(in, n);
    hash = XXH3_64bits(in, n * sizeof(uint64_t));
    cached = &managedCache_[hash & (managedSlots_ - 1)];
    if (cached->n == n && cached->hash == hash &&
        std::memcmp(cached->frames, in, n * sizeof(uint64_t)) == 0)
      return ++managedHits_, cached->id;
  }
  ++managedMisses_;
  uint32_t id = internManaged(in, n);
  if (cached) {
    cached->hash = hash;
    cached->n = n;
    cached->id = id;
    std::memcpy(cached->frames, in, n * sizeof(uint64_t));
  }
  return id;
}

}  // namespace heapman::rec::writer
