#include "datasets/numeric_csv.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "datasets/edge_text.hpp"
#include "datasets/text_input.hpp"

namespace ht::data {
namespace {

// Parses one token; false when it is not a whole number of type T.
template <typename T>
bool parse_token(std::string_view tok, T& out) {
  while (!tok.empty() && (tok.front() == ' ' || tok.front() == '\t')) tok.remove_prefix(1);
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\t' || tok.back() == '\r')) tok.remove_suffix(1);
  if (!tok.empty() && tok.front() == '+') tok.remove_prefix(1);
  if (tok.empty()) return false;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  return ec == std::errc() && p == tok.data() + tok.size();
}

// Parses line `text` into `out` (cols values); returns -1 when fine, else
// the column (0-based) that failed, or cols when the count is wrong.
template <typename T>
int64_t parse_line(std::string_view text, int64_t cols, T* out) {
  int64_t c = 0;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view tok = text.substr(0, comma);
    if (c >= cols) return cols;
    if (!parse_token(tok, out[c])) return c;
    ++c;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return c == cols ? -1 : cols;
}

template <typename T>
CsvNumbers<T> read_numbers(const std::string& path, const char* what, const char* kind) {
  const TextInput input(path);
  const std::string_view text = text_of_file(input.text(), path);
  // Line starts; trailing blank lines are dropped.
  std::vector<size_t> starts;
  for (size_t p = 0; p < text.size();) {
    starts.push_back(p);
    const void* nl = std::memchr(text.data() + p, '\n', text.size() - p);
    p = nl ? static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1 : text.size();
  }
  const auto line_at = [&](int64_t i) {
    const size_t b = starts[i];
    const size_t e = i + 1 < static_cast<int64_t>(starts.size()) ? starts[i + 1] : text.size();
    std::string_view l = text.substr(b, e - b);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.remove_suffix(1);
    return l;
  };
  while (!starts.empty() && line_at(static_cast<int64_t>(starts.size()) - 1).find_first_not_of(" \t") ==
                                std::string_view::npos)
    starts.pop_back();
  CsvNumbers<T> out;
  out.rows = static_cast<int64_t>(starts.size());
  if (out.rows == 0) return out;
  out.cols = static_cast<int64_t>(std::count(line_at(0).begin(), line_at(0).end(), ',')) + 1;
  out.values.resize(static_cast<size_t>(out.rows * out.cols));
  int64_t bad = std::numeric_limits<int64_t>::max();
#pragma omp parallel for schedule(static) reduction(min : bad) if (out.rows > (1 << 14))
  for (int64_t i = 0; i < out.rows; ++i)
    if (parse_line(line_at(i), out.cols, out.values.data() + i * out.cols) >= 0) bad = std::min(bad, i);
  if (bad != std::numeric_limits<int64_t>::max()) {
    const std::string_view l = line_at(bad);
    std::vector<T> row(static_cast<size_t>(out.cols));
    const int64_t c = parse_line(l, out.cols, row.data());
    const int64_t have = static_cast<int64_t>(std::count(l.begin(), l.end(), ',')) + 1;
    if (c == out.cols || have != out.cols)
      throw line_error(path, bad + 1,
                       fmt::format("{} columns, line 1 has {} ({}: every line needs the same count)", have, out.cols,
                                   what));
    std::string_view tok = l;
    for (int64_t k = 0; k < c; ++k) tok.remove_prefix(tok.find(',') + 1);
    tok = tok.substr(0, tok.find(','));
    throw line_error(path, bad + 1,
                     fmt::format("column {}: '{}' is not {} ({})", c + 1, tok.substr(0, 40), kind, what));
  }
  log::debug("{}: {} rows x {} columns of {}", path, out.rows, out.cols, what);
  return out;
}

}  // namespace

CsvNumbers<float> read_csv_floats(const std::string& path, const char* what) {
  return read_numbers<float>(path, what, "a number");
}
CsvNumbers<double> read_csv_doubles(const std::string& path, const char* what) {
  return read_numbers<double>(path, what, "a number");
}
CsvNumbers<int64_t> read_csv_integers(const std::string& path, const char* what) {
  return read_numbers<int64_t>(path, what, "an integer");
}

}  // namespace ht::data
