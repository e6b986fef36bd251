// DumpStore (dump_store.h).
#include "heapman/graph/dump_store.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "heapman/logformat/bytes.h"
#include "heapman/logformat/ram_dump.h"

namespace heapman::graph {

DumpStore::DumpStore(const log::LogReader& reader) : reader_(reader) {
  for (const log::ChunkRef& c : reader.chunks())
    if (c.header.type == static_cast<uint16_t>(log::ChunkType::kRamDump)) ram_.push_back(&c);
  chunkGcs_.resize(ram_.size());
}

namespace {

// f(header) for each segment of dump chunk c's raw payload; a payload that ends inside a segment
// is a FormatError naming c.
template <class F>
void forEachHeader(const log::ChunkRef& c, std::span<const uint8_t> raw, F&& f) {
  try {
    log::forEachRamSegment(raw, f);
  } catch (const log::CursorOverrun& e) {
    throw log::FormatError(log::ErrorCode::kBadRecord, c.offset, c.number,
                           std::string("RAM dump segment: ") + e.what());
  }
}

}  // namespace

template <class F>
void DumpStore::parse(size_t ramIndex, std::span<const uint8_t> raw, F&& f) const {
  forEachHeader(*ram_[ramIndex], raw, f);
}

std::vector<uint32_t> DumpStore::gcsIn(const log::LogReader& reader, const log::ChunkRef& c) {
  std::vector<uint8_t> buffer;
  std::set<uint32_t> in;
  forEachHeader(c, reader.payload(c, buffer), [&](const Header& h) { in.insert(h.gc); });
  return {in.begin(), in.end()};
}

void DumpStore::useIndexedCopies(std::span<const replay::DumpCopy> copies) {
  indexed_ = copies;
  useIndex_ = true;
}

const DumpStore::Where* DumpStore::findIndexedCopy(uint64_t hash, Where& out) const {
  auto it = std::lower_bound(indexed_.begin(), indexed_.end(), hash,
                             [](const replay::DumpCopy& c, uint64_t h) { return c.hash < h; });
  if (it == indexed_.end() || it->hash != hash) return nullptr;
  auto r = std::lower_bound(ram_.begin(), ram_.end(), it->chunk,
                            [](const log::ChunkRef* c, uint64_t n) { return c->number < n; });
  if (r == ram_.end() || (*r)->number != it->chunk) return nullptr;
  out = Where{static_cast<uint32_t>(r - ram_.begin()), it->offset};
  return &out;
}

void DumpStore::listGcs() {
  if (listed_) return;
  listed_ = true;
  std::map<uint64_t, const log::IndexEntry*> byOffset;
  if (reader_.index())
    for (const log::IndexEntry& e : reader_.index()->chunks) byOffset[e.offset] = &e;
  std::set<uint32_t> all;
  for (size_t i = 0; i < ram_.size(); ++i) {
    auto it = byOffset.find(ram_[i]->offset);
    if (it != byOffset.end() && !it->second->gcNumbers.empty()) {
      chunkGcs_[i] = it->second->gcNumbers;
    } else {
      chunkGcs_[i] = gcsIn(reader_, *ram_[i]);
    }
    all.insert(chunkGcs_[i].begin(), chunkGcs_[i].end());
  }
  gcs_.assign(all.begin(), all.end());
}

const std::vector<uint32_t>& DumpStore::dumpedGcs() {
  listGcs();
  return gcs_;
}

bool DumpStore::has(uint32_t gc) {
  listGcs();
  return std::binary_search(gcs_.begin(), gcs_.end(), gc);
}

std::string DumpStore::describeDumped() {
  listGcs();
  if (gcs_.empty()) return "none";
  std::string s = "GC ";
  size_t shown = std::min<size_t>(gcs_.size(), 20);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(gcs_[i]);
  if (shown < gcs_.size()) s += ", ... " + std::to_string(gcs_.back());
  s += " (" + std::to_string(gcs_.size()) + (gcs_.size() == 1 ? " dump)" : " dumps)");
  return s;
}

void DumpStore::addCopy(uint64_t hash, Where w) {
  if ((copies_ + 1) * 2 > firstCopy_.size()) {
    std::vector<Slot> old = std::move(firstCopy_);
    firstCopy_.assign(std::max<size_t>(1024, old.size() * 2), Slot{0, {UINT32_MAX, 0}});
    copies_ = 0;
    for (const Slot& s : old)
      if (s.where.chunk != UINT32_MAX) addCopy(s.hash, s.where);
  }
  size_t mask = firstCopy_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    Slot& s = firstCopy_[i];
    if (s.where.chunk == UINT32_MAX) {
      s = {hash, w};
      ++copies_;
      return;
    }
    if (s.hash == hash) return;  // the first copy stays
  }
}

const DumpStore::Where* DumpStore::findCopy(uint64_t hash) const {
  if (firstCopy_.empty()) return nullptr;
  size_t mask = firstCopy_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = firstCopy_[i];
    if (s.where.chunk == UINT32_MAX) return nullptr;
    if (s.hash == hash) return &s.where;
  }
}

namespace {

// Logs from the writer that sorts a dump's runs hold its objects in address order already: a
// check instead of a sort (10 M objects: 0.25-0.3 s each of the three sorts below).
template <class T, class Less>
void sortIfNeeded(std::vector<T>& v, Less less) {
  if (!std::is_sorted(v.begin(), v.end(), less)) std::sort(v.begin(), v.end(), less);
}
const auto byAddress = [](const DumpSegment& a, const DumpSegment& b) {
  return a.address < b.address;
};

// Joins the pieces the writer cut a long range into (kSegmentPiece, contiguous, same kind); with
// `runs` (a dump with object lists: its object segments are runs cut at 4 KiB pages), every
// segment that continues the one before.
void joinPieces(std::vector<DumpSegment>& v, bool runs) {
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (out && v[out - 1].kind == v[i].kind && (runs || v[out - 1].length % kSegmentPiece == 0) &&
        v[out - 1].address + v[out - 1].length == v[i].address &&
        v[out - 1].offset + v[out - 1].length == v[i].offset) {
      v[out - 1].length += v[i].length;
      continue;
    }
    v[out++] = v[i];
  }
  v.resize(out);
}

// The objects of a dump written with object lists (format.h kObjectList): each listed object
// becomes a segment over the bytes of the run that holds it. An object whose bytes the dump
// does not hold whole is dropped (counted as an overlap: the log is inconsistent).
void objectsFromLists(Dump& d, const std::vector<DumpSegment>& lists) {
  std::vector<std::pair<uint64_t, uint64_t>> objects;  // address, size
  for (const DumpSegment& l : lists) {
    log::ByteCursor in(d.data(l), d.data(l) + l.length);
    uint64_t at = l.address;
    try {
      while (!in.atEnd()) {
        at += in.varint();
        objects.emplace_back(at, in.varint());
      }
    } catch (const log::CursorOverrun&) {
      ++d.overlapsDropped;  // a list cut short: the objects before the cut are kept
    }
  }
  sortIfNeeded(objects, std::less<>());
  std::vector<DumpSegment> runs;
  runs.swap(d.objects);
  sortIfNeeded(runs, byAddress);
  size_t r = 0;
  for (const auto& [address, size] : objects) {
    while (r < runs.size() && runs[r].address + runs[r].length <= address) ++r;
    if (r == runs.size() || address < runs[r].address ||
        address + size > runs[r].address + runs[r].length || size == 0) {
      ++d.overlapsDropped;
      continue;
    }
    d.objects.push_back({address, size, runs[r].offset + (address - runs[r].address),
                         log::SegmentKind::kObject});
  }
}

}  // namespace

Dump DumpStore::load(uint32_t gc) {
  if (!has(gc))
    throw GraphError("no RAM dump at GC " + std::to_string(gc) + "; dumps in this log: " +
                     describeDumped() +
                     ". Record with `heaprec run --ram-dumps every` (or every:N, or event:NAME "
                     "for the collection after a custom event)");
  size_t first = ram_.size(), last = 0;
  for (size_t i = 0; i < ram_.size(); ++i)
    if (std::find(chunkGcs_[i].begin(), chunkGcs_[i].end(), gc) != chunkGcs_[i].end()) {
      first = std::min(first, i);
      last = i;
    }

  struct Piece {
    DumpSegment seg;
    Where from;  // deduplicated: where the first copy is
  };
  std::vector<Piece> pieces, deferred;
  Dump d;
  d.gc = gc;
  uint64_t reserve = 0;
  for (size_t i = first; i <= last; ++i) reserve += ram_[i]->header.rawLength;
  d.bytes.reserve(reserve);
  auto hex = [](uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(b);
  };
  // One pass: hash the chunks not hashed yet, take the GC's segments from its own chunks. With
  // the index's table of first copies, only the GC's own chunks are read.
  Where indexedWhere;
  for (size_t i = useIndex_ ? first : std::min(hashed_, first); i <= last; ++i) {
    auto raw = reader_.payload(*ram_[i], buffer_);
    bool hashing = !useIndex_ && i >= hashed_, mine = i >= first;
    parse(i, raw, [&](const Header& h) {
      if (hashing && h.stored) addCopy(h.hash, Where{static_cast<uint32_t>(i), h.bytesAt});
      if (!mine || h.gc != gc || h.length == 0) return;
      DumpSegment seg{h.address, h.length, d.bytes.size(), h.kind};
      if (h.stored) {
        ++d.storedSegments;
        d.bytes.insert(d.bytes.end(), raw.data() + h.bytesAt, raw.data() + h.bytesAt + h.length);
        pieces.push_back({seg, {}});
        return;
      }
      const Where* it = useIndex_ ? findIndexedCopy(h.hash, indexedWhere) : findCopy(h.hash);
      if (!it)
        throw log::FormatError(log::ErrorCode::kBadRecord, ram_[i]->offset, ram_[i]->number,
                               "RAM dump segment at " + hex(h.address) +
                                   " refers to content no earlier segment holds");
      ++d.dedupSegments;
      d.bytes.resize(d.bytes.size() + h.length);
      pieces.push_back({seg, *it});
      deferred.push_back({seg, *it});
    });
    if (hashing) hashed_ = std::max(hashed_, i + 1);
  }
  // The first copies, each chunk decompressed once.
  std::sort(deferred.begin(), deferred.end(),
            [](const Piece& a, const Piece& b) { return a.from.chunk < b.from.chunk; });
  uint32_t loaded = UINT32_MAX;
  std::span<const uint8_t> raw;
  for (const Piece& p : deferred) {
    if (p.from.chunk != loaded) {
      raw = reader_.payload(*ram_[p.from.chunk], buffer_);
      loaded = p.from.chunk;
    }
    if (uint64_t{p.from.offset} + p.seg.length > raw.size())
      throw log::FormatError(log::ErrorCode::kBadRecord, ram_[p.from.chunk]->offset,
                             ram_[p.from.chunk]->number, "RAM dump segment runs past its chunk");
    std::memcpy(d.bytes.data() + p.seg.offset, raw.data() + p.from.offset, p.seg.length);
  }
  d.byteCount = d.bytes.size();

  std::vector<DumpSegment> lists;
  for (const Piece& p : pieces) {
    if (p.seg.kind == log::SegmentKind::kObjectList)
      lists.push_back(p.seg);
    else
      (p.seg.kind == log::SegmentKind::kObject ? d.objects : d.roots).push_back(p.seg);
  }
  joinPieces(d.objects, !lists.empty());
  joinPieces(d.roots, false);
  if (!lists.empty()) objectsFromLists(d, lists);
  sortIfNeeded(d.objects, byAddress);
  // Objects never overlap in a collector's heap; a repeated segment is dropped (counted).
  size_t out = 0;
  for (size_t i = 0; i < d.objects.size(); ++i) {
    if (out && d.objects[i].address < d.objects[out - 1].address + d.objects[out - 1].length) {
      ++d.overlapsDropped;
      continue;
    }
    d.objects[out++] = d.objects[i];
  }
  d.objects.resize(out);
  return d;
}

}  // namespace heapman::graph
