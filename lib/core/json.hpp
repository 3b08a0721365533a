#pragma once
// Minimal JSON writer (objects, arrays, numbers, strings, bools) for
// --json / --stats-json / --metrics-out outputs. Not a parser.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ht {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(int64_t i);
  JsonWriter& value(int i) { return value(static_cast<int64_t>(i)); }
  JsonWriter& value(uint64_t i);  // all 64 bits (no wrap to negative above INT64_MAX)
  JsonWriter& value(bool b);
  JsonWriter& null();
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

 private:
  void separator();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string json_escape(std::string_view s);

}  // namespace ht
