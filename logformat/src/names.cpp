// Stable names of enums, used in messages and in `heapman info` output (text and JSON).
#include "heapman/logformat/error.h"
#include "heapman/logformat/format.h"
#include "heapman/logformat/records.h"

namespace heapman::log {

const char* heapKindName(HeapKind k) {
  switch (k) {
    case HeapKind::kNative: return "native";
    case HeapKind::kGcNormal: return "gc";
    case HeapKind::kGcAtomic: return "gc_atomic";
    case HeapKind::kGcUncollectable: return "gc_uncollectable";
    case HeapKind::kGcj: return "gcj";
    case HeapKind::kGcTyped: return "gc_typed";
    case HeapKind::kManaged: return "managed";
    case HeapKind::kOther: return "other";
  }
  return "?";
}

const char* segmentKindName(SegmentKind k) {
  switch (k) {
    case SegmentKind::kObject: return "object";
    case SegmentKind::kStaticRoot: return "static_root";
    case SegmentKind::kThreadStack: return "thread_stack";
    case SegmentKind::kOther: return "other";
    case SegmentKind::kObjectList: return "object_list";
  }
  return "unknown";
}

const char* rootSourceName(RootSource s) {
  switch (s) {
    case RootSource::kStaticData: return "static_data";
    case RootSource::kRegistered: return "registered";
    case RootSource::kThreadStack: return "thread_stack";
    case RootSource::kMonoStatic: return "mono_static";
    case RootSource::kMonoThreadStatic: return "mono_thread_static";
    case RootSource::kMonoDomain: return "mono_domain";
    case RootSource::kMonoHandle: return "mono_handle";
    case RootSource::kMonoStack: return "mono_stack";
    case RootSource::kOther: return "other";
    case RootSource::kMarkProcedure: return "mark_procedure";
    case RootSource::kPushedRange: return "pushed_range";
    case RootSource::kFinalizeQueue: return "finalize_queue";
  }
  return "unknown";
}

const char* gcHandleTypeName(GcHandleType t) {
  switch (t) {
    case GcHandleType::kWeak: return "weak";
    case GcHandleType::kWeakTrackResurrection: return "weak_track_resurrection";
    case GcHandleType::kNormal: return "normal";
    case GcHandleType::kPinned: return "pinned";
    case GcHandleType::kOther: return "other";
  }
  return "unknown";
}

const char* recordKindName(size_t kindIndex) {
  static constexpr const char* kNames[] = {
      "alloc",      "free",        "realloc",      "stack_node",   "collected",
      "string",     "type_def",    "method_def",   "gc_begin",     "gc_end",
      "root_range", "root_set",    "custom_event", "frame_mark",   "thread_start",
      "thread_stop", "module_load", "module_unload", "jit_range",  "lost",
      "gc_handle",  "finalize"};
  static_assert(std::size(kNames) == kRecordKindCount, "one name per Record alternative");
  return kindIndex < kRecordKindCount ? kNames[kindIndex] : "?";
}

const char* runtimeKindName(Runtime::Kind k) {
  switch (k) {
    case Runtime::Kind::kNativeMalloc: return "native_malloc";
    case Runtime::Kind::kBdwgc: return "bdwgc";
    case Runtime::Kind::kMono: return "mono";
  }
  return "?";
}

bool extKindIsEvent(ExtKind k) {
  switch (k) {
    case ExtKind::kString:
    case ExtKind::kTypeDef:
    case ExtKind::kMethodDef:
      return false;
    default:
      return true;
  }
}

const char* errorCodeName(ErrorCode c) {
  switch (c) {
    case ErrorCode::kIo: return "io";
    case ErrorCode::kEmpty: return "empty";
    case ErrorCode::kNotALog: return "not_a_log";
    case ErrorCode::kNewerVersion: return "newer_version";
    case ErrorCode::kOlderVersion: return "older_version";
    case ErrorCode::kTruncatedHeader: return "truncated_header";
    case ErrorCode::kBadHeader: return "bad_header";
    case ErrorCode::kBadChunkHeader: return "bad_chunk_header";
    case ErrorCode::kBadChecksum: return "bad_checksum";
    case ErrorCode::kBadPayload: return "bad_payload";
    case ErrorCode::kBadRecord: return "bad_record";
    case ErrorCode::kBadFooter: return "bad_footer";
    case ErrorCode::kBadSequence: return "bad_sequence";
  }
  return "?";
}

namespace {
std::string compose(uint64_t offset, int64_t chunk, const std::string& message) {
  std::string where = chunk >= 0 ? "chunk " + std::to_string(chunk) + " at byte " +
                                       std::to_string(offset) + ": "
                                 : (offset ? "at byte " + std::to_string(offset) + ": " : "");
  return where + message;
}
}  // namespace

FormatError::FormatError(ErrorCode code, uint64_t offset, int64_t chunk, const std::string& message)
    : std::runtime_error(compose(offset, chunk, message)),
      code_(code),
      offset_(offset),
      chunk_(chunk),
      detail_(message) {}

}  // namespace heapman::log
