// Conversions between the C++ records and their Cap'n Proto messages (heapman.capnp), packed.
// Internal to logformat. Decoders throw kj::Exception on malformed input; callers convert.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "heapman/logformat/index.h"
#include "heapman/logformat/records.h"

namespace heapman::log::detail {

std::vector<uint8_t> encodeHeader(const Header& h);
Header decodeHeader(std::span<const uint8_t> bytes);

std::vector<uint8_t> encodeIndex(const IndexData& idx);
IndexData decodeIndex(std::span<const uint8_t> bytes);

std::vector<uint8_t> encodeBody(const LogString& r);
std::vector<uint8_t> encodeBody(const TypeDef& r);
std::vector<uint8_t> encodeBody(const MethodDef& r);
std::vector<uint8_t> encodeBody(const GcBegin& r);
std::vector<uint8_t> encodeBody(const GcEnd& r);
std::vector<uint8_t> encodeBody(const RootRange& r);
std::vector<uint8_t> encodeBody(const RootSet& r);
std::vector<uint8_t> encodeBody(const CustomEvent& r);
std::vector<uint8_t> encodeBody(const FrameMark& r);
std::vector<uint8_t> encodeBody(const ThreadStart& r);
std::vector<uint8_t> encodeBody(const ThreadStop& r);
std::vector<uint8_t> encodeBody(const ModuleLoad& r);
std::vector<uint8_t> encodeBody(const ModuleUnload& r);
std::vector<uint8_t> encodeBody(const JitRange& r);
std::vector<uint8_t> encodeBody(const Lost& r);
std::vector<uint8_t> encodeBody(const GcHandle& r);
std::vector<uint8_t> encodeBody(const Finalize& r);

// The bodies of the two records a Mono program writes millions of (a GC handle for every managed
// object native code holds: Unity's every wrapper), packed by hand into `out` (kSmallBodyMax
// bytes): byte for byte what encodeBody writes (tested), without a MessageBuilder (~200 ns).
inline constexpr size_t kSmallBodyMax = 48;
size_t encodeSmallBody(const GcHandle& r, uint8_t* out);
size_t encodeSmallBody(const Finalize& r, uint8_t* out);

// nullopt: a kind this reader does not know (skipped by length).
std::optional<Record> decodeBody(uint32_t kind, const EventCommon& ev,
                                 std::span<const uint8_t> bytes);

}  // namespace heapman::log::detail
