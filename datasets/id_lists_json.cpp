#include "datasets/id_lists_json.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace ht::data {
namespace {

class Scanner {
 public:
  Scanner(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= text_.size();
  }
  char peek() {
    skip_ws();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  int64_t integer() {
    skip_ws();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc() || v < 0) fail("expected a non-negative integer");
    pos_ = static_cast<size_t>(p - text_.data());
    return v;
  }
  int64_t quoted_integer() {
    expect('"');
    const int64_t v = integer();
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a vertex id as a quoted decimal key");
    ++pos_;
    return v;
  }
  [[noreturn]] void fail(const std::string& what) const {
    const int64_t line = 1 + std::count(text_.begin(), text_.begin() + std::min(pos_, text_.size()), '\n');
    std::string near(text_.substr(pos_, 20));
    std::replace(near.begin(), near.end(), '\n', ' ');
    throw line_error(path_, line, fmt::format("{} near '{}' (expected {{\"<vertex id>\": [<feature id>, ...], ...}})",
                                              what, near));
  }

 private:
  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

IdLists read_id_lists_json(const std::string& path) {
  MappedFile file(path);
  Scanner in(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), path);
  IdLists out;
  out.offsets.push_back(0);
  in.expect('{');
  if (!in.accept('}')) {
    do {
      out.keys.push_back(in.quoted_integer());
      in.expect(':');
      in.expect('[');
      if (!in.accept(']')) {
        do {
          const int64_t v = in.integer();
          out.values.push_back(v);
          out.max_value = std::max(out.max_value, v);
        } while (in.accept(','));
        in.expect(']');
      }
      out.offsets.push_back(static_cast<int64_t>(out.values.size()));
    } while (in.accept(','));
    in.expect('}');
  }
  if (!in.at_end()) in.fail("trailing text after the object");
  return out;
}

}  // namespace ht::data
