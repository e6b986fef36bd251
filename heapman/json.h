// Minimal JSON output for the verbs' --json modes (objects, numbers, strings; RFC 8259 escaping).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "heapman/report/report.h"

namespace heapman::cli {

inline std::string jsonString(std::string_view s) { return report::jsonString(s, false); }

// Builds one JSON object; nest with raw().
class JsonObject {
 public:
  JsonObject& num(std::string_view key, uint64_t v) { return raw(key, std::to_string(v)); }
  JsonObject& str(std::string_view key, std::string_view v) { return raw(key, jsonString(v)); }
  JsonObject& boolean(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& raw(std::string_view key, const std::string& json) {
    body_ += body_.empty() ? "" : ",";
    body_ += jsonString(key) + ":" + json;
    return *this;
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

}  // namespace heapman::cli
