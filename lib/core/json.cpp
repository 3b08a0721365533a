#include "core/json.hpp"

#include <cmath>

#include <fmt/format.h>

namespace ht {

std::string json_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", c);
        else o += c;
    }
  }
  return o;
}

void JsonWriter::separator() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separator();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separator();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  separator();
  out_ += '"';
  out_ += json_escape(k);
  out_ += "\":";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) {
  separator();
  out_ += '"';
  out_ += json_escape(s);
  out_ += '"';
  return *this;
}
JsonWriter& JsonWriter::value(double d) {
  separator();
  if (std::isfinite(d)) out_ += fmt::format("{}", d);
  else out_ += "null";
  return *this;
}
JsonWriter& JsonWriter::value(int64_t i) {
  separator();
  out_ += fmt::format("{}", i);
  return *this;
}
JsonWriter& JsonWriter::value(uint64_t i) {
  separator();
  out_ += fmt::format("{}", i);
  return *this;
}
JsonWriter& JsonWriter::value(bool b) {
  separator();
  out_ += b ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::null() {
  separator();
  out_ += "null";
  return *this;
}

}  // namespace ht
