#include "datasets/id_lists_json.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "datasets/text_input.hpp"

namespace ht::data {
namespace {

constexpr const char* kShape = "expected {\"<vertex id>\": [<feature id>, ...], ...}";

// A char iterator that records the last character the parser read, so that
// the SAX handler knows where in the file an event happened (nlohmann's
// SAX interface passes no position).
struct TrackingIterator {
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p = nullptr;
  const char** last = nullptr;
  reference operator*() const {
    *last = p;
    return *p;
  }
  TrackingIterator& operator++() {
    ++p;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator t = *this;
    ++p;
    return t;
  }
  bool operator==(const TrackingIterator& o) const { return p == o.p; }
  bool operator!=(const TrackingIterator& o) const { return p != o.p; }
};

// Builds the lists from SAX events; anything but the one accepted shape stops
// the parse with a message and the byte offset of the event.
class Handler final : public nlohmann::json_sax<nlohmann::json> {
  enum class Token { other, number, string };

 public:
  Handler(const char* begin, const char** last, IdLists& out) : begin_(begin), last_(last), out_(out) {}

  bool null() override { return wrong("null"); }
  bool boolean(bool) override { return wrong("a boolean"); }
  bool number_integer(number_integer_t v) override {
    if (depth_ != 2) return wrong("a number", Token::number);
    return fail(fmt::format("feature id {} is negative", v), Token::number);
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (depth_ != 2) return wrong("a number", Token::number);
    if (v > static_cast<uint64_t>(INT64_MAX)) return fail(fmt::format("feature id {} is too large", v), Token::number);
    out_.values.push_back(static_cast<int64_t>(v));
    out_.max_value = std::max(out_.max_value, static_cast<int64_t>(v));
    return true;
  }
  bool number_float(number_float_t, const string_t& s) override {
    if (depth_ != 2) return wrong("a number", Token::number);
    return fail(fmt::format("feature id {} is not an integer", s), Token::number);
  }
  bool string(string_t&) override { return wrong("a string", Token::string); }
  bool binary(binary_t&) override { return wrong("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_ != 0 || done_) return wrong("an object");
    depth_ = 1;
    out_.offsets.assign(1, 0);
    return true;
  }
  bool end_object() override {
    depth_ = 0;
    done_ = true;
    return true;
  }
  bool key(string_t& k) override {
    int64_t v = -1;
    auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), v);
    if (k.empty() || ec != std::errc() || p != k.data() + k.size() || v < 0)
      return fail(fmt::format("key \"{}\" is not a vertex id (a non-negative decimal integer)", k), Token::string);
    out_.keys.push_back(v);
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ != 1) return wrong("an array");
    depth_ = 2;
    return true;
  }
  bool end_array() override {
    depth_ = 1;
    out_.offsets.push_back(static_cast<int64_t>(out_.values.size()));
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // nlohmann counts the characters read, the offending one included.
    error_at_ = position > 0 ? static_cast<int64_t>(position) - 1 : 0;
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 2, column 12: syntax error ..." -> "syntax error ..."
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what.erase(0, colon + 2);
    message_ = done_ ? "trailing text after the object" : what;
    return false;
  }

  int64_t error_at() const { return error_at_; }
  const std::string& message() const { return message_; }

 private:
  bool wrong(const char* what, Token token = Token::other) {
    return fail(fmt::format("found {} {}", what,
                            depth_ == 0   ? "where the file must hold one object"
                            : depth_ == 1 ? "as a vertex's value, which must be a list of feature ids"
                                          : "in a feature list, which holds non-negative integers"),
                token);
  }
  // The parser has read one character past a number (and up to the closing
  // quote of a string): the error is reported at the token's first byte.
  bool fail(std::string message, Token token = Token::other) {
    message_ = std::move(message);
    const char* p = *last_ ? *last_ : begin_;
    if (token == Token::number)
      while (p > begin_ && std::strchr("0123456789+-.eE", p[-1])) --p;
    if (token == Token::string && p > begin_)
      while (p > begin_ && *--p != '"') {
      }
    error_at_ = p - begin_;
    return false;
  }
  const char* begin_;
  const char** last_;
  IdLists& out_;
  int depth_ = 0;  // 0 outside, 1 in the object, 2 in a list
  bool done_ = false;
  int64_t error_at_ = 0;
  std::string message_;
};

}  // namespace

IdLists read_id_lists_json(const std::string& path) {
  const TextInput input(path);  // gzip inflated
  const std::string_view file = input.text();
  const char* begin = file.data();
  const char* end = begin + file.size();
  const char* last = nullptr;
  IdLists out;
  Handler handler(begin, &last, out);
  if (!nlohmann::json::sax_parse(TrackingIterator{begin, &last}, TrackingIterator{end, &last}, &handler)) {
    const int64_t at = std::min<int64_t>(handler.error_at(), static_cast<int64_t>(file.size()));
    const int64_t line = 1 + std::count(begin, begin + at, '\n');
    std::string near(begin + at, begin + std::min<int64_t>(at + 20, static_cast<int64_t>(file.size())));
    std::replace(near.begin(), near.end(), '\n', ' ');
    throw line_error(path, line, fmt::format("byte {}: {} near '{}' ({})", at, handler.message(), near, kShape));
  }
  if (out.offsets.empty()) out.offsets.push_back(0);
  return out;
}

}  // namespace ht::data
