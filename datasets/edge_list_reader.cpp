#include "datasets/edge_list_reader.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "datasets/edge_text.hpp"
#include "datasets/text_input.hpp"

namespace ht::data {
namespace {

bool ends_with_csv(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".csv";
}

bool is_number(std::string_view tok) {
  if (!tok.empty() && (tok[0] == '-' || tok[0] == '+')) tok.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  return !tok.empty() && ec == std::errc() && p == tok.data() + tok.size();
}

// Skips the header line when asked to (or detected); returns the remaining
// text and sets `first_line` to the line number it starts at.
std::string_view skip_header(std::string_view text, const std::string& path, HeaderMode mode, int64_t& first_line) {
  first_line = 1;
  if (mode == HeaderMode::no) return text;
  std::string_view rest = text;
  int64_t line_no = 1;
  while (!rest.empty()) {
    std::string_view line = take_line(rest);
    if (!is_blank_or_comment(line, "#%")) {
      std::string_view tok[1];
      split_tokens(line, tok, 1);
      const bool numeric = is_number(tok[0]);
      const bool header = mode == HeaderMode::yes || (ends_with_csv(without_gz_suffix(path)) && !numeric);
      if (!header && !numeric)
        throw line_error(path, line_no,
                         fmt::format("non-numeric token '{}' in column 1: if this is a header line, pass --header",
                                     tok[0].substr(0, 40)));
      if (!header) return text;
      log::debug("{}: skipping header line {}", path, line_no);
      first_line = line_no + 1;
      return rest;
    }
    ++line_no;
  }
  return text;
}

}  // namespace

RawEdges read_edge_list(const std::string& path, const EdgeListOptions& opt) {
  const TextInput file(path);  // gzip inflated
  std::string_view text = text_of_file(file.text(), path);
  EdgeTextOptions t;
  t.path = path;
  t.keep_weights = opt.keep_weights;
  t.id_limit = opt.id_limit;
  t.limit_note = opt.limit_note;
  text = skip_header(text, path, opt.header, t.first_line);
  return parse_edge_text(text, t);
}

}  // namespace ht::data
