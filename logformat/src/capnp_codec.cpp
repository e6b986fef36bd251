#include "capnp_codec.h"

#include <algorithm>
#include <cstring>

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <capnp/serialize.h>
#include <kj/io.h>

#include "heapman.capnp.h"

namespace heapman::log::detail {
namespace s = schema;

namespace {

// Packed bytes appended straight to the vector returned (kj::VectorOutputStream's buffer and a
// copy out of it were two allocations more per record).
class AppendStream final : public kj::OutputStream {
 public:
  explicit AppendStream(std::vector<uint8_t>& out) : out_(out) {}
  void write(const void* buffer, size_t size) override {
    const auto* p = static_cast<const uint8_t*>(buffer);
    out_.insert(out_.end(), p, p + size);
  }

 private:
  std::vector<uint8_t>& out_;
};

std::vector<uint8_t> pack(capnp::MessageBuilder& msg) {
  std::vector<uint8_t> bytes;
  bytes.reserve(capnp::computeSerializedSizeInWords(msg) * sizeof(capnp::word));
  AppendStream out(bytes);
  capnp::writePackedMessage(out, msg);
  return bytes;
}

// The first segment of every record body's message: a body is a few words (a GcBegin, a
// FrameMark, a MethodDef's name), and MallocMessageBuilder's default first segment is 1024 words
// calloc'd, then freed, for each record. The builder zeroes what it used when it is destroyed,
// as its constructor requires. Larger bodies (a RootSet) go on in segments it allocates.
constexpr size_t kScratchWords = 128;
thread_local capnp::word t_scratch[kScratchWords] = {};

// Upper bound on the unpacked size of one message (header, index or extended body).
constexpr size_t kMaxMessageWords = kMaxChunkRaw / sizeof(capnp::word);

// Unpacks a packed message (capnp packing: a tag byte, then the word's nonzero bytes; tag 0x00
// is followed by a count of further zero words, tag 0xFF by a count of verbatim words) into
// exactly the words the bytes hold. Refuses more than `maxWords` and a truncated stream.
kj::Array<capnp::word> unpack(std::span<const uint8_t> in, size_t maxWords) {
  size_t words = 0;
  for (size_t i = 0; i < in.size();) {
    uint8_t tag = in[i++];
    size_t run = 0;
    if (tag != 0x00) i += static_cast<size_t>(__builtin_popcount(tag));
    if (tag == 0x00 || tag == 0xFF) {
      KJ_REQUIRE(i < in.size(), "packed message ends inside a run");
      run = in[i++];
      if (tag == 0xFF) i += run * sizeof(capnp::word);
    }
    KJ_REQUIRE(i <= in.size(), "packed message ends inside a word");
    words += 1 + run;
    KJ_REQUIRE(words <= maxWords, "message unpacks to more words than its size allows", maxWords);
  }
  auto out = kj::heapArray<capnp::word>(words);
  auto* o = reinterpret_cast<uint8_t*>(out.begin());
  for (size_t i = 0; i < in.size();) {
    uint8_t tag = in[i++];
    for (int b = 0; b < 8; ++b) *o++ = (tag >> b) & 1 ? in[i++] : 0;
    if (tag == 0x00 || tag == 0xFF) {
      size_t run = in[i++] * sizeof(capnp::word);
      if (tag == 0x00) {
        std::memset(o, 0, run);
      } else {
        std::memcpy(o, in.data() + i, run);
        i += run;
      }
      o += run;
    }
  }
  return out;
}

// Reads a packed message from a bounded span. It is unpacked first, so memory follows the bytes
// that are there and never the segment sizes the message declares (PackedMessageReader would
// allocate those up front: a 20 KB log could make it ask for gigabytes). The unpacked size is
// capped at 128 bytes per packed byte (a 2-byte zero run otherwise stands for 2 KiB) and at
// kMaxMessageWords; the traversal limit, as before, scales with the input (amplification guard).
template <class Fn>
auto withReader(std::span<const uint8_t> bytes, Fn&& fn) {
  uint64_t limit = 64 + static_cast<uint64_t>(bytes.size()) * 16;
  kj::Array<capnp::word> words = unpack(bytes, std::min<uint64_t>(limit, kMaxMessageWords));
  capnp::ReaderOptions opts;
  opts.traversalLimitInWords = limit;
  opts.nestingLimit = 16;
  capnp::FlatArrayMessageReader reader(words, opts);
  return fn(reader);
}

// std::string -> Text with its length: the implicit kj::StringPtr conversion stops at the first NUL.
capnp::Text::Reader textOf(const std::string& s) { return capnp::Text::Reader(s.c_str(), s.size()); }
std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }
std::vector<uint8_t> data(capnp::Data::Reader d) { return std::vector<uint8_t>(d.begin(), d.end()); }
kj::ArrayPtr<const kj::byte> bytesOf(const std::vector<uint8_t>& v) {
  return kj::arrayPtr(v.data(), v.size());
}

s::RootSource toSchema(RootSource v) { return static_cast<s::RootSource>(v); }
RootSource fromSchema(s::RootSource v) {
  auto raw = static_cast<uint16_t>(v);
  return raw <= static_cast<uint16_t>(kLastRootSource) ? static_cast<RootSource>(raw)
                                                            : RootSource::kOther;
}

}  // namespace

std::vector<uint8_t> encodeHeader(const Header& h) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<s::Header>();
  b.setRecorderVersion(textOf(h.recorderVersion));
  b.setPid(h.pid);
  b.setParentPid(h.parentPid);
  b.setExecutable(textOf(h.executable));
  auto cl = b.initCommandLine(h.commandLine.size());
  for (size_t i = 0; i < h.commandLine.size(); ++i) cl.set(i, textOf(h.commandLine[i]));
  b.setStartWallTimeNs(h.startWallTimeNs);
  b.setStartClockNs(h.startClockNs);
  b.setClock(textOf(h.clock));
  b.setPointerSize(h.pointerSize);
  auto rt = b.initRuntimes(h.runtimes.size());
  for (size_t i = 0; i < h.runtimes.size(); ++i) {
    rt[i].setKind(static_cast<s::RuntimeKind>(h.runtimes[i].kind));
    rt[i].setVersion(textOf(h.runtimes[i].version));
  }
  auto op = b.initOptions(h.options.size());
  for (size_t i = 0; i < h.options.size(); ++i) {
    op[i].setKey(textOf(h.options[i].first));
    op[i].setValue(textOf(h.options[i].second));
  }
  b.setHostname(textOf(h.hostname));
  return pack(msg);
}

Header decodeHeader(std::span<const uint8_t> bytes) {
  return withReader(bytes, [](capnp::MessageReader& m) {
    auto r = m.getRoot<s::Header>();
    Header h;
    h.recorderVersion = text(r.getRecorderVersion());
    h.pid = r.getPid();
    h.parentPid = r.getParentPid();
    h.executable = text(r.getExecutable());
    for (auto a : r.getCommandLine()) h.commandLine.push_back(text(a));
    h.startWallTimeNs = r.getStartWallTimeNs();
    h.startClockNs = r.getStartClockNs();
    h.clock = text(r.getClock());
    h.pointerSize = r.getPointerSize();
    for (auto rt : r.getRuntimes()) {
      auto k = static_cast<uint16_t>(rt.getKind());
      h.runtimes.push_back({k <= 2 ? static_cast<Runtime::Kind>(k) : Runtime::Kind::kNativeMalloc,
                            text(rt.getVersion())});
    }
    for (auto kv : r.getOptions()) h.options.emplace_back(text(kv.getKey()), text(kv.getValue()));
    h.hostname = text(r.getHostname());
    return h;
  });
}

std::vector<uint8_t> encodeIndex(const IndexData& idx) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<s::Index>();
  b.setComplete(idx.complete);
  b.setEndSeq(idx.endSeq);
  b.setEndTimeNs(idx.endTimeNs);
  b.setRecordCount(idx.recordCount);
  b.setLostEvents(idx.lostEvents);
  b.setEventCount(idx.eventCount);
  b.setCodeMarked(idx.codeMarked);
  auto list = b.initChunks(idx.chunks.size());
  for (size_t i = 0; i < idx.chunks.size(); ++i) {
    const IndexEntry& e = idx.chunks[i];
    auto c = list[i];
    c.setOffset(e.offset);
    c.setType(e.type);
    c.setFirstSeq(e.firstSeq);
    c.setLastSeq(e.lastSeq);
    c.setRecordCount(e.recordCount);
    auto g = c.initGcNumbers(e.gcNumbers.size());
    for (size_t j = 0; j < e.gcNumbers.size(); ++j) g.set(j, e.gcNumbers[j]);
    auto ev = c.initEventNameIds(e.eventNameIds.size());
    for (size_t j = 0; j < e.eventNameIds.size(); ++j) ev.set(j, e.eventNameIds[j]);
    c.setFirstTimeNs(e.firstTimeNs);
    c.setLastTimeNs(e.lastTimeNs);
    c.setNamesCode(e.namesCode);
  }
  return pack(msg);
}

IndexData decodeIndex(std::span<const uint8_t> bytes) {
  return withReader(bytes, [](capnp::MessageReader& m) {
    auto r = m.getRoot<s::Index>();
    IndexData idx;
    idx.complete = r.getComplete();
    idx.endSeq = r.getEndSeq();
    idx.endTimeNs = r.getEndTimeNs();
    idx.recordCount = r.getRecordCount();
    idx.lostEvents = r.getLostEvents();
    idx.eventCount = r.getEventCount();
    idx.codeMarked = r.getCodeMarked();
    for (auto c : r.getChunks()) {
      IndexEntry e;
      e.offset = c.getOffset();
      e.type = c.getType();
      e.firstSeq = c.getFirstSeq();
      e.lastSeq = c.getLastSeq();
      e.recordCount = c.getRecordCount();
      for (auto g : c.getGcNumbers()) e.gcNumbers.push_back(g);
      for (auto n : c.getEventNameIds()) e.eventNameIds.push_back(n);
      e.firstTimeNs = c.getFirstTimeNs();
      e.lastTimeNs = c.getLastTimeNs();
      e.namesCode = c.getNamesCode();
      idx.chunks.push_back(std::move(e));
    }
    return idx;
  });
}

// Each encodeBody builds the struct of the same name in heapman.capnp.
#define HEAPMAN_BODY(Type, ...)                   \
  std::vector<uint8_t> encodeBody(const Type& r) { \
    capnp::MallocMessageBuilder msg(t_scratch);   \
    auto b = msg.initRoot<s::Type>();             \
    __VA_ARGS__;                                  \
    return pack(msg);                             \
  }

HEAPMAN_BODY(LogString, b.setId(r.id); b.setText(textOf(r.text)))
HEAPMAN_BODY(TypeDef, b.setId(r.id); b.setName(textOf(r.name)); b.setInstanceSize(r.instanceSize);
             b.setDescriptor(r.descriptor);
             b.setLayout(static_cast<s::TypeLayout>(r.layout));
             auto l = b.initRefOffsets(static_cast<unsigned>(r.refOffsets.size()));
             for (size_t i = 0; i < r.refOffsets.size(); ++i) l.set(static_cast<unsigned>(i), r.refOffsets[i]);
             b.setElementSize(r.elementSize); b.setDataOffset(r.dataOffset))
HEAPMAN_BODY(MethodDef, b.setId(r.id); b.setName(textOf(r.name)); b.setHandle(r.handle))
HEAPMAN_BODY(GcBegin, b.setGcNumber(r.gcNumber); b.setHeapSize(r.heapSize);
             b.setGeneration(r.generation))
HEAPMAN_BODY(GcEnd, b.setGcNumber(r.gcNumber); b.setHeapSize(r.heapSize);
             b.setFreeBytes(r.freeBytes); b.setPauseNs(r.pauseNs))
HEAPMAN_BODY(RootRange, b.setAdded(r.added); b.setAddress(r.address); b.setSize(r.size);
             b.setSource(toSchema(r.source)); b.setLabel(textOf(r.label)))
HEAPMAN_BODY(RootSet, b.setGcNumber(r.gcNumber); auto l = b.initRoots(r.roots.size());
             for (size_t i = 0; i < r.roots.size(); ++i) {
               l[i].setAddress(r.roots[i].address);
               l[i].setSize(r.roots[i].size);
               l[i].setSource(toSchema(r.roots[i].source));
               l[i].setThread(r.roots[i].thread);
             })
HEAPMAN_BODY(CustomEvent, b.setNameId(r.nameId); b.setPayload(bytesOf(r.payload));
             b.setStackId(r.stackId))
HEAPMAN_BODY(FrameMark, b.setFrame(r.frame))
HEAPMAN_BODY(ThreadStart, b.setIndex(r.index); b.setOsTid(r.osTid); b.setName(textOf(r.name));
             b.setStackLow(r.stackLow); b.setStackHigh(r.stackHigh))
HEAPMAN_BODY(ThreadStop, b.setIndex(r.index))
HEAPMAN_BODY(ModuleLoad, b.setPath(textOf(r.path)); b.setBase(r.base); b.setSize(r.size);
             b.setBuildId(bytesOf(r.buildId)); auto l = b.initSegments(r.segments.size());
             for (size_t i = 0; i < r.segments.size(); ++i) {
               l[i].setVaddr(r.segments[i].vaddr);
               l[i].setMemSize(r.segments[i].memSize);
               l[i].setFlags(r.segments[i].flags);
             })
HEAPMAN_BODY(ModuleUnload, b.setBase(r.base))
HEAPMAN_BODY(JitRange, b.setMethodId(r.methodId); b.setCodeStart(r.codeStart);
             b.setCodeSize(r.codeSize))
HEAPMAN_BODY(Lost, b.setCount(r.count); b.setThread(r.lostThread); b.setReason(textOf(r.reason)))
HEAPMAN_BODY(GcHandle, b.setHandle(r.handle);
             b.setType(static_cast<s::GcHandleType>(std::min<uint8_t>(static_cast<uint8_t>(r.type), 4)));
             b.setAddress(r.address); b.setCreated(r.created))
HEAPMAN_BODY(Finalize, b.setAddress(r.address))
#undef HEAPMAN_BODY

namespace {

// Cap'n Proto's packing of a flat message, the same choices as capnp::writePackedMessage: a tag
// byte per word (bit i: byte i is not zero) and the nonzero bytes; after a zero word the count of
// zero words that follow it; after a word with no zero byte the count of the following words
// that have at most one zero byte, written as they are.
size_t packWords(const uint64_t* words, size_t n, uint8_t* out) {
  uint8_t* o = out;
  for (size_t i = 0; i < n;) {
    uint8_t b[8];
    std::memcpy(b, &words[i], 8);
    uint8_t* tag = o++;
    *tag = 0;
    for (int k = 0; k < 8; ++k)
      if (b[k]) *tag |= static_cast<uint8_t>(1u << k), *o++ = b[k];
    ++i;
    if (*tag == 0) {
      size_t run = 0;
      while (i < n && words[i] == 0 && run < 255) ++i, ++run;
      *o++ = static_cast<uint8_t>(run);
    } else if (*tag == 0xff) {
      size_t start = i;
      while (i < n && i - start < 255) {
        int zeros = 0;
        for (int k = 0; k < 8; ++k) zeros += ((words[i] >> (8 * k)) & 0xff) == 0;
        if (zeros >= 2) break;
        ++i;
      }
      *o++ = static_cast<uint8_t>(i - start);
      std::memcpy(o, &words[start], (i - start) * 8);
      o += (i - start) * 8;
    }
  }
  return static_cast<size_t>(o - out);
}

// A one-segment message whose root is a struct of `dataWords` data words and no pointers: the
// segment table (one segment of 1 + dataWords words), the root pointer, the data.
size_t packFlatStruct(const uint64_t* data, uint16_t dataWords, uint8_t* out) {
  uint64_t words[2 + 4];
  words[0] = (uint64_t{1} + dataWords) << 32;  // segment count - 1 = 0, then its size in words
  words[1] = uint64_t{dataWords} << 32;      // struct pointer: offset 0, data words, no pointers
  std::memcpy(words + 2, data, dataWords * sizeof(uint64_t));
  return packWords(words, 2u + dataWords, out);
}

}  // namespace

// GcHandle's data section (heapman.capnp): handle (bits 0-31), type (32-47), created (bit 48),
// address (word 1).
size_t encodeSmallBody(const GcHandle& r, uint8_t* out) {
  const uint64_t type = std::min<uint8_t>(static_cast<uint8_t>(r.type), 4);
  const uint64_t data[2] = {r.handle | type << 32 | uint64_t{r.created} << 48, r.address};
  return packFlatStruct(data, 2, out);
}

size_t encodeSmallBody(const Finalize& r, uint8_t* out) {
  const uint64_t data[1] = {r.address};
  return packFlatStruct(data, 1, out);
}

std::optional<Record> decodeBody(uint32_t kind, const EventCommon& ev,
                                 std::span<const uint8_t> bytes) {
  if (kind == 0 || kind > kExtKindMax) return std::nullopt;
  return withReader(bytes, [&](capnp::MessageReader& m) -> std::optional<Record> {
    switch (static_cast<ExtKind>(kind)) {
      case ExtKind::kString: {
        auto r = m.getRoot<s::LogString>();
        return LogString{r.getId(), text(r.getText())};
      }
      case ExtKind::kTypeDef: {
        auto r = m.getRoot<s::TypeDef>();
        TypeDef t{r.getId(), text(r.getName()), r.getInstanceSize(), r.getDescriptor()};
        auto layout = static_cast<uint16_t>(r.getLayout());
        // A layout this reader does not know is scanned conservatively, as an older log's.
        if (layout <= static_cast<uint16_t>(TypeLayout::kArray)) {
          t.layout = static_cast<TypeLayout>(layout);
          for (uint32_t off : r.getRefOffsets()) t.refOffsets.push_back(off);
          t.elementSize = r.getElementSize();
          t.dataOffset = r.getDataOffset();
        }
        return t;
      }
      case ExtKind::kMethodDef: {
        auto r = m.getRoot<s::MethodDef>();
        return MethodDef{r.getId(), text(r.getName()), r.getHandle()};
      }
      case ExtKind::kGcBegin: {
        auto r = m.getRoot<s::GcBegin>();
        return GcBegin{ev, r.getGcNumber(), r.getHeapSize(), r.getGeneration()};
      }
      case ExtKind::kGcEnd: {
        auto r = m.getRoot<s::GcEnd>();
        return GcEnd{ev, r.getGcNumber(), r.getHeapSize(), r.getFreeBytes(), r.getPauseNs()};
      }
      case ExtKind::kRootRange: {
        auto r = m.getRoot<s::RootRange>();
        return RootRange{ev, r.getAdded(), r.getAddress(), r.getSize(), fromSchema(r.getSource()),
                         text(r.getLabel())};
      }
      case ExtKind::kRootSet: {
        auto r = m.getRoot<s::RootSet>();
        RootSet out{ev, r.getGcNumber(), {}};
        for (auto e : r.getRoots())
          out.roots.push_back({e.getAddress(), e.getSize(), fromSchema(e.getSource()), e.getThread()});
        return out;
      }
      case ExtKind::kCustomEvent: {
        auto r = m.getRoot<s::CustomEvent>();
        return CustomEvent{ev, r.getNameId(), data(r.getPayload()), r.getStackId()};
      }
      case ExtKind::kFrameMark:
        return FrameMark{ev, m.getRoot<s::FrameMark>().getFrame()};
      case ExtKind::kThreadStart: {
        auto r = m.getRoot<s::ThreadStart>();
        return ThreadStart{ev, r.getIndex(), r.getOsTid(), text(r.getName()), r.getStackLow(),
                           r.getStackHigh()};
      }
      case ExtKind::kThreadStop:
        return ThreadStop{ev, m.getRoot<s::ThreadStop>().getIndex()};
      case ExtKind::kModuleLoad: {
        auto r = m.getRoot<s::ModuleLoad>();
        ModuleLoad out{ev, text(r.getPath()), r.getBase(), r.getSize(), data(r.getBuildId()), {}};
        for (auto seg : r.getSegments())
          out.segments.push_back({seg.getVaddr(), seg.getMemSize(), seg.getFlags()});
        return out;
      }
      case ExtKind::kModuleUnload:
        return ModuleUnload{ev, m.getRoot<s::ModuleUnload>().getBase()};
      case ExtKind::kJitRange: {
        auto r = m.getRoot<s::JitRange>();
        return JitRange{ev, r.getMethodId(), r.getCodeStart(), r.getCodeSize()};
      }
      case ExtKind::kLost: {
        auto r = m.getRoot<s::Lost>();
        return Lost{ev, r.getCount(), r.getThread(), text(r.getReason())};
      }
      case ExtKind::kGcHandle: {
        auto r = m.getRoot<s::GcHandle>();
        auto type = static_cast<uint16_t>(r.getType());
        return GcHandle{ev, r.getHandle(),
                        type <= 4 ? static_cast<GcHandleType>(type) : GcHandleType::kOther,
                        r.getAddress(), r.getCreated()};
      }
      case ExtKind::kFinalize:
        return Finalize{ev, m.getRoot<s::Finalize>().getAddress()};
    }
    return std::nullopt;
  });
}

}  // namespace heapman::log::detail
